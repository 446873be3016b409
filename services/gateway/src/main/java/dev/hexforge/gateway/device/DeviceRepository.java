package dev.hexforge.gateway.device;

import org.springframework.data.jpa.repository.JpaRepository;

import java.util.List;
import java.util.Optional;
import java.util.UUID;

interface DeviceRepository extends JpaRepository<DeviceEntity, UUID> {
    Optional<DeviceEntity> findByTokenHash(String tokenHash);

    List<DeviceEntity> findByTenantOrderByNameAsc(String tenant);
}
