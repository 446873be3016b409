package dev.hexforge.gateway.device;

import org.springframework.data.jpa.repository.JpaRepository;

import java.time.Instant;
import java.util.List;
import java.util.UUID;

interface BenchmarkTaskRepository extends JpaRepository<BenchmarkTaskEntity, UUID> {
    List<BenchmarkTaskEntity> findByTenantAndStateOrderByCreatedAtAsc(String tenant, BenchmarkTaskEntity.State state);

    List<BenchmarkTaskEntity> findByStateAndLeaseUntilBefore(BenchmarkTaskEntity.State state, Instant before);

    List<BenchmarkTaskEntity> findByDeviceIdAndState(UUID deviceId, BenchmarkTaskEntity.State state);
}
