package dev.hexforge.gateway.upload;

import org.springframework.data.domain.Page;
import org.springframework.data.domain.Pageable;
import org.springframework.data.jpa.repository.JpaRepository;
import org.springframework.data.jpa.repository.Query;

import java.util.Optional;
import java.util.UUID;

public interface UploadRepository extends JpaRepository<UploadEntity, UUID> {
    Optional<UploadEntity> findByIdAndTenant(UUID id, String tenant);

    Page<UploadEntity> findByTenantOrderByCreatedAtDesc(String tenant, Pageable page);

    /** What a tenant's uploads unpack to, together. */
    @Query("select coalesce(sum(u.unpackedSize), 0) from UploadEntity u where u.tenant = ?1")
    long unpackedBytes(String tenant);
}
