package dev.hexforge.gateway.auth;

import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;

import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import java.util.UUID;


/**
 * Dashboard sessions held server-side: signing in with an API token gives the browser a random session secret (never
 * the token), valid for {@link #LIFETIME} unless signed out or its token is revoked first.
 */
@Service
public class UiSessionService {
    static final String PREFIX = "hxs_";
    public static final Duration LIFETIME = Duration.ofHours(12);
    private final UiSessionRepository sessions;
    private final TokenRepository tokens;

    UiSessionService(UiSessionRepository sessions, TokenRepository tokens) {
        this.sessions = sessions;
        this.tokens = tokens;
    }

    /** A new session for a live API token; returns the cookie's secret. */
    @Transactional
    public String open(TokenEntity token) {
        String secret = TokenService.newSecret(PREFIX);
        UiSessionEntity s = new UiSessionEntity();
        s.id = UUID.randomUUID();
        s.secretHash = TokenService.hash(secret);
        s.tokenId = token.id;
        s.createdAt = Instant.now();
        s.expiresAt = s.createdAt.plus(LIFETIME);
        sessions.save(s);
        return secret;
    }

    /** The token a session stands for, while the session is open and unexpired and the token unrevoked. */
    Optional<TokenEntity> lookup(String secret) {
        if (secret == null || !secret.startsWith(PREFIX)) {
            return Optional.empty();
        }
        return sessions.findBySecretHash(TokenService.hash(secret))
                .filter(s -> s.revokedAt == null && s.expiresAt.isAfter(Instant.now()))
                .flatMap(s -> tokens.findById(s.tokenId)).filter(t -> t.revokedAt == null);
    }

    @Transactional
    public void close(String secret) {
        if (secret != null && secret.startsWith(PREFIX)) {
            sessions.findBySecretHash(TokenService.hash(secret)).filter(s -> s.revokedAt == null).ifPresent(s -> s.revokedAt = Instant.now());
        }
    }
}
