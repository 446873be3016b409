package dev.hexforge.gateway;

import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import org.springframework.stereotype.Component;
import org.springframework.web.filter.OncePerRequestFilter;

import java.io.IOException;
import java.util.Optional;

/** Every /api request needs {@code Authorization: Bearer <token>}; the token's tenant scopes what the caller sees. */
@Component
class TokenFilter extends OncePerRequestFilter {
    static final String TENANT_ATTRIBUTE = "hexforge.tenant";
    static final String ADMIN_ATTRIBUTE = "hexforge.admin";
    private final TokenService tokens;

    TokenFilter(TokenService tokens) {
        this.tokens = tokens;
    }

    @Override
    protected boolean shouldNotFilter(HttpServletRequest request) {
        String path = request.getRequestURI();
        return !path.startsWith("/api/") || path.equals("/api/v1/health");
    }

    @Override
    protected void doFilterInternal(HttpServletRequest request, HttpServletResponse response, FilterChain chain)
            throws ServletException, IOException {
        String header = request.getHeader("Authorization");
        Optional<TokenEntity> token = header != null && header.startsWith("Bearer ")
                ? tokens.lookup(header.substring("Bearer ".length()).trim()) : Optional.empty();
        if (token.isEmpty()) {
            response.setStatus(HttpServletResponse.SC_UNAUTHORIZED);
            response.setContentType("application/json");
            response.setHeader("WWW-Authenticate", "Bearer");
            response.getWriter().write("{\"error\":\"" + (header == null ? "missing API token: send Authorization: Bearer <token>"
                    : "invalid or revoked API token") + "\"}");
            return;
        }
        request.setAttribute(TENANT_ATTRIBUTE, token.get().tenant);
        request.setAttribute(ADMIN_ATTRIBUTE, token.get().admin);
        chain.doFilter(request, response);
    }
}
