package dev.hexforge.gateway.job;

import org.springframework.data.domain.Page;
import org.springframework.data.domain.Pageable;
import org.springframework.data.jpa.repository.JpaRepository;

import java.util.Optional;
import java.util.UUID;

public interface JobRepository extends JpaRepository<JobEntity, UUID> {
    Optional<JobEntity> findByIdAndTenant(UUID id, String tenant);

    Page<JobEntity> findByTenantOrderByCreatedAtDesc(String tenant, Pageable page);

    Page<JobEntity> findByTenantAndStateOrderByCreatedAtDesc(String tenant, JobEntity.State state, Pageable page);
}
