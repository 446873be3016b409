package dev.hexforge.artifactservice;

import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import org.springframework.stereotype.Component;
import org.springframework.web.filter.OncePerRequestFilter;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;

/**
 * The internal API answers the gateway only: every request, whatever its path, must carry the shared secret in
 * {@code X-Hexforge-Internal} (deny by default; {@link dev.hexforge.web.RequestFirewall} has refused every other
 * spelling of a path before this runs). Tenancy is the gateway's to establish: the tenant a request names is taken
 * only from a caller that holds the secret.
 */
@Component
class InternalTokenFilter extends OncePerRequestFilter {
    static final String HEADER = "X-Hexforge-Internal";
    private final byte[] token;

    InternalTokenFilter(ArtifactServiceProperties settings) {
        this.token = settings.internalToken().getBytes(StandardCharsets.UTF_8);
    }

    @Override
    protected boolean shouldNotFilter(HttpServletRequest request) {
        return false;
    }

    @Override
    protected void doFilterInternal(HttpServletRequest request, HttpServletResponse response, FilterChain chain)
            throws ServletException, IOException {
        String given = request.getHeader(HEADER);
        if (token.length == 0 || given == null || !MessageDigest.isEqual(token, given.getBytes(StandardCharsets.UTF_8))) {
            response.setStatus(HttpServletResponse.SC_UNAUTHORIZED);
            response.setContentType("application/json");
            response.getWriter().write("{\"error\":\"internal API: missing or wrong " + HEADER + " secret\"}");
            return;
        }
        chain.doFilter(request, response);
    }
}
