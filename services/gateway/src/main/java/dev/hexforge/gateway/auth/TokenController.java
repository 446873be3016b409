package dev.hexforge.gateway.auth;

import dev.hexforge.contracts.ApiMessages;
import dev.hexforge.contracts.DeviceMessages;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.DeleteMapping;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestAttribute;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RestController;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.UUID;

/**
 * Tokens API v1: a caller creates, lists and revokes tokens of its own tenant; an admin token (the bootstrap one)
 * does so for any tenant, which is how a new tenant gets its first token. A token's secret is shown once.
 */
@RestController
class TokenController {
    private final TokenService tokens;

    TokenController(TokenService tokens) {
        this.tokens = tokens;
    }

    /** Body: {@code {"tenant": "...", "name": "..."}}, both optional (the caller's tenant; "token"). */
    @PostMapping("/api/v1/tokens")
    ResponseEntity<Map<String, Object>> create(@RequestBody(required = false) String body,
                                               @RequestAttribute(TokenFilter.TENANT_ATTRIBUTE) String tenant,
                                               @RequestAttribute(TokenFilter.ADMIN_ATTRIBUTE) boolean admin) {
        ApiMessages.NewToken request;
        try {
            // a wrong-typed value is refused, never defaulted
            request = body == null || body.isBlank() ? ApiMessages.NewToken.DEFAULT : DeviceMessages.read(body, ApiMessages.NewToken.class);
        } catch (IllegalArgumentException e) {
            return ResponseEntity.badRequest().body(Map.of("error", e.getMessage()));
        }
        String forTenant = request.tenant() != null ? request.tenant() : tenant;
        String name = request.nameOrDefault();
        if (!forTenant.equals(tenant) && !admin) {
            return ResponseEntity.status(HttpStatus.FORBIDDEN).body(Map.of("error",
                    "only an admin token creates tokens of other tenants; this token belongs to '" + tenant + "'"));
        }
        String secret;
        try {
            secret = tokens.create(forTenant, name);
        } catch (IllegalArgumentException e) {
            return ResponseEntity.badRequest().body(Map.of("error", e.getMessage()));
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("tenant", forTenant);
        out.put("name", name);
        out.put("token", secret);
        out.put("note", "store the token now: it is not shown again");
        return ResponseEntity.status(HttpStatus.CREATED).body(out);
    }

    @GetMapping("/api/v1/tokens")
    Map<String, Object> list(@RequestAttribute(TokenFilter.TENANT_ATTRIBUTE) String tenant,
                             @RequestAttribute(TokenFilter.ADMIN_ATTRIBUTE) boolean admin) {
        return Map.of("tokens", tokens.visible(tenant, admin).stream().map(t -> {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("id", t.id.toString());
            m.put("tenant", t.tenant);
            m.put("name", t.name);
            m.put("admin", t.admin);
            m.put("createdAt", t.createdAt.toString());
            m.put("revokedAt", t.revokedAt == null ? null : t.revokedAt.toString());
            return m;
        }).toList());
    }

    @DeleteMapping("/api/v1/tokens/{id}")
    ResponseEntity<Map<String, Object>> revoke(@PathVariable UUID id, @RequestAttribute(TokenFilter.TENANT_ATTRIBUTE) String tenant,
                                               @RequestAttribute(TokenFilter.ADMIN_ATTRIBUTE) boolean admin) {
        if (!tokens.revoke(id, tenant, admin)) {
            return ResponseEntity.status(HttpStatus.NOT_FOUND).body(Map.of("error", "no token " + id));
        }
        return ResponseEntity.ok(Map.of("revoked", id.toString()));
    }
}
