package dev.hexforge.gateway.auth;

import jakarta.persistence.Column;
import jakarta.persistence.Entity;
import jakarta.persistence.Id;
import jakarta.persistence.Table;

import java.time.Instant;
import java.util.UUID;

/** An API token: only its sha256 is stored; the token itself is shown once, when created. */
@Entity
@Table(name = "api_tokens")
public class TokenEntity {
    @Id
    UUID id;
    @Column(nullable = false)
    String tenant;
    @Column(nullable = false)
    String name;
    @Column(name = "token_hash", nullable = false, length = 64)
    String tokenHash;
    @Column(name = "created_at", nullable = false)
    Instant createdAt;
    @Column(name = "revoked_at")
    Instant revokedAt;
    /** May manage the tokens of every tenant. */
    boolean admin;
}
