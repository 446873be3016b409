package dev.hexforge.gateway.auth;

import org.springframework.data.jpa.repository.JpaRepository;

import java.util.List;
import java.util.Optional;
import java.util.UUID;

interface TokenRepository extends JpaRepository<TokenEntity, UUID> {
    Optional<TokenEntity> findByTokenHashAndRevokedAtIsNull(String tokenHash);

    List<TokenEntity> findByTenantOrderByCreatedAtAsc(String tenant);

    List<TokenEntity> findAllByOrderByCreatedAtAsc();
}
