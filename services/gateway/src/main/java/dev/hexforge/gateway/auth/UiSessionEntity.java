package dev.hexforge.gateway.auth;

import jakarta.persistence.Column;
import jakarta.persistence.Entity;
import jakarta.persistence.Id;
import jakarta.persistence.Table;

import java.time.Instant;
import java.util.UUID;

/** A dashboard session: the hash of the cookie's random secret, the API token it stands for, and its lifetime. */
@Entity
@Table(name = "ui_sessions")
class UiSessionEntity {
    @Id
    UUID id;
    @Column(name = "secret_hash", nullable = false, length = 64)
    String secretHash;
    @Column(name = "token_id", nullable = false)
    UUID tokenId;
    @Column(name = "created_at", nullable = false)
    Instant createdAt;
    @Column(name = "expires_at", nullable = false)
    Instant expiresAt;
    @Column(name = "revoked_at")
    Instant revokedAt;
}
