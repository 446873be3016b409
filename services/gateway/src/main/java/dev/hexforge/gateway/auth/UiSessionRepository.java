package dev.hexforge.gateway.auth;

import org.springframework.data.jpa.repository.JpaRepository;

import java.util.Optional;
import java.util.UUID;

interface UiSessionRepository extends JpaRepository<UiSessionEntity, UUID> {
    Optional<UiSessionEntity> findBySecretHash(String secretHash);
}
