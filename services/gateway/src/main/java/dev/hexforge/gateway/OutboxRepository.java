package dev.hexforge.gateway;

import org.springframework.data.jpa.repository.JpaRepository;

import java.util.List;

interface OutboxRepository extends JpaRepository<OutboxEntity, Long> {
    List<OutboxEntity> findTop100BySentAtIsNullOrderByIdAsc();
}
