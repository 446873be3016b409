package dev.hexforge.gateway.auth;

import dev.hexforge.gateway.config.GatewayProperties;
import dev.hexforge.io.Folders;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.context.event.ApplicationReadyEvent;
import org.springframework.context.event.EventListener;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.time.Instant;
import java.util.Base64;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import java.util.UUID;


/**
 * API tokens: created with a tenant, stored hashed, resolved to the tenant on every request. On the first start
 * of a deployment with {@code hexforge.bootstrap-token-file} set, a token for tenant "default" is created and written
 * to that file (mode 600) so the operator can log in.
 */
@Service
public class TokenService {
    public static final String PREFIX = "hxf_";
    /** Tenant names: they appear in storage keys and logs, so no '.' or '..' alone and nothing but these characters. */
    public static final String TENANT_PATTERN = "[A-Za-z0-9][A-Za-z0-9._-]{0,99}";
    private static final Logger LOG = LoggerFactory.getLogger(TokenService.class);
    private final TokenRepository tokens;
    private final String bootstrapFile;
    private static final SecureRandom RANDOM = new SecureRandom();

    TokenService(TokenRepository tokens, GatewayProperties settings) {
        this.tokens = tokens;
        this.bootstrapFile = settings.bootstrapTokenFile();
    }

    /** Creates a token for the tenant and returns it; it cannot be shown again. */
    @Transactional
    public String create(String tenant, String name) {
        return create(tenant, name, false);
    }

    @Transactional
    public String create(String tenant, String name, boolean admin) {
        if (tenant == null || !tenant.matches(TENANT_PATTERN)) {
            throw new IllegalArgumentException("tenant must be 1-100 letters, digits, '.', '_' or '-', starting with a letter or digit");
        }
        String token = newSecret(PREFIX);
        TokenEntity t = new TokenEntity();
        t.id = UUID.randomUUID();
        t.tenant = tenant;
        t.name = name;
        t.tokenHash = hash(token);
        t.createdAt = Instant.now();
        t.admin = admin;
        tokens.save(t);
        return token;
    }

    public Optional<TokenEntity> lookup(String token) {
        if (token == null || !token.startsWith(PREFIX)) {
            return Optional.empty();
        }
        return tokens.findByTokenHashAndRevokedAtIsNull(hash(token));
    }

    /** The tokens the caller may see: its tenant's, or every tenant's for an admin. */
    List<TokenEntity> visible(String tenant, boolean admin) {
        return admin ? tokens.findAllByOrderByCreatedAtAsc() : tokens.findByTenantOrderByCreatedAtAsc(tenant);
    }

    /** Revokes a token the caller may manage; false when there is none (or it is another tenant's). */
    @Transactional
    public boolean revoke(UUID id, String tenant, boolean admin) {
        Optional<TokenEntity> t = tokens.findById(id).filter(x -> admin || x.tenant.equals(tenant));
        t.filter(x -> x.revokedAt == null).ifPresent(x -> x.revokedAt = Instant.now());
        return t.isPresent();
    }

    @EventListener(ApplicationReadyEvent.class)
    @Transactional
    public void bootstrap() {
        if (bootstrapFile.isBlank() || tokens.count() > 0) {
            return;
        }
        Path file = Path.of(bootstrapFile);
        Folders.writePrivate(file, create("default", "bootstrap", true));
        LOG.info("created the first API token (tenant default) in {}", file);
    }

    /** A new bearer secret: the prefix and 256 random bits; only its {@link #hash} is ever stored. */
    public static String newSecret(String prefix) {
        byte[] b = new byte[32];
        RANDOM.nextBytes(b);
        return prefix + Base64.getUrlEncoder().withoutPadding().encodeToString(b);
    }

    public static String hash(String token) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(token.getBytes(StandardCharsets.UTF_8)));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
