package dev.hexforge.artifactservice;

import org.springframework.data.domain.Page;
import org.springframework.data.domain.Pageable;
import org.springframework.data.jpa.repository.JpaRepository;

import java.util.List;
import java.util.Optional;
import java.util.UUID;

interface ArtifactRepository extends JpaRepository<ArtifactEntity, UUID> {
    Optional<ArtifactEntity> findByIdAndTenant(UUID id, String tenant);

    Page<ArtifactEntity> findByTenantOrderByCreatedAtDesc(String tenant, Pageable page);

    Page<ArtifactEntity> findByTenantAndJobIdOrderByCreatedAtDesc(String tenant, UUID jobId, Pageable page);

    List<ArtifactEntity> findByJobIdOrderByCreatedAtAsc(UUID jobId);
}
