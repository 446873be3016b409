package dev.hexforge.gateway.auth;

import dev.hexforge.gateway.DashboardController;
import dev.hexforge.web.RequestFirewall;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.Cookie;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import org.springframework.stereotype.Component;
import org.springframework.web.filter.OncePerRequestFilter;

import java.io.IOException;
import java.util.Optional;
import java.util.Set;

/** Every /api request needs {@code Authorization: Bearer <token>}; the token's tenant scopes what the caller sees. */
@Component
public class TokenFilter extends OncePerRequestFilter {
    public static final String TENANT_ATTRIBUTE = "hexforge.tenant";
    static final String ADMIN_ATTRIBUTE = "hexforge.admin";
    public static final String DEVICE_ATTRIBUTE = "hexforge.device";
    static final String UI_HEADER = "X-Hexforge-UI";
    private final TokenService tokens;
    private final DeviceTokens devices;
    private final UiSessionService sessions;

    TokenFilter(TokenService tokens, DeviceTokens devices, UiSessionService sessions) {
        this.tokens = tokens;
        this.sessions = sessions;
        this.devices = devices;
    }

    /** What a device token may do: the runner API, and read its tenant's artifacts and the signing keys. */
    private static boolean deviceMayCall(HttpServletRequest r) {
        String p = r.getRequestURI();
        return p.startsWith("/api/v1/runner/") || (r.getMethod().equals("GET") && (p.startsWith("/api/v1/artifacts/") || p.equals("/api/v1/keys")));
    }

    public static String sessionCookie(HttpServletRequest request) {
        if (request.getCookies() == null) {
            return null;
        }
        for (Cookie c : request.getCookies()) {
            if (c.getName().equals(DashboardController.COOKIE) && !c.getValue().isBlank()) {
                return c.getValue();
            }
        }
        return null;
    }

    private static void reject(HttpServletResponse response, int status, String message) throws IOException {
        response.setStatus(status);
        response.setContentType("application/json");
        response.getWriter().write("{\"error\":\"" + message + "\"}");
    }

    /** What answers without a token: the dashboard's static files, the sign-in, health, readiness and the API document. */
    private static final Set<String> PUBLIC = Set.of("/", "/index.html", "/login.html", "/login.js", "/app.js", "/app.css",
            "/favicon.ico", "/api/v1/health", "/api/v1/ready", "/swagger-ui.html", "/v3/api-docs", "/ui/session", "/ui/logout");

    /** Deny by default: every path needs a token but the public ones (the firewall has put paths in one plain form). */
    @Override
    protected boolean shouldNotFilter(HttpServletRequest request) {
        String path = request.getRequestURI();
        return PUBLIC.contains(path) || path.startsWith("/webjars/") || path.startsWith("/swagger-ui/") || path.startsWith("/v3/api-docs/");
    }

    @Override
    protected void doFilterInternal(HttpServletRequest request, HttpServletResponse response, FilterChain chain)
            throws ServletException, IOException {
        String header = request.getHeader("Authorization");
        String bearer = RequestFirewall.bearer(header);
        if (header == null) {
            String session = sessionCookie(request);
            if (session != null) {
                // the dashboard: an open session, and a change only from a page of ours (a header no other site can send)
                if (!request.getMethod().equals("GET") && !"1".equals(request.getHeader(UI_HEADER))) {
                    reject(response, HttpServletResponse.SC_FORBIDDEN, "a change through the session cookie needs the " + UI_HEADER + " header");
                    return;
                }
                Optional<TokenEntity> signedIn = sessions.lookup(session);
                if (signedIn.isEmpty()) {
                    reject(response, HttpServletResponse.SC_UNAUTHORIZED, "the session has ended; sign in again with an API token");
                    return;
                }
                request.setAttribute(TENANT_ATTRIBUTE, signedIn.get().tenant);
                request.setAttribute(ADMIN_ATTRIBUTE, signedIn.get().admin);
                chain.doFilter(request, response);
                return;
            }
        }
        if (bearer != null && bearer.startsWith(DeviceTokens.PREFIX)) {
            Optional<DeviceTokens.Device> device = devices.device(bearer);
            if (device.isPresent() && deviceMayCall(request)) {
                request.setAttribute(TENANT_ATTRIBUTE, device.get().tenant());
                request.setAttribute(ADMIN_ATTRIBUTE, false);
                request.setAttribute(DEVICE_ATTRIBUTE, device.get().id());
                chain.doFilter(request, response);
                return;
            }
            if (device.isPresent()) {
                reject(response, HttpServletResponse.SC_FORBIDDEN, "a device token only runs benchmark tasks and reads artifacts");
            } else {
                reject(response, HttpServletResponse.SC_UNAUTHORIZED, "invalid device token");
            }
            return;
        }
        if (request.getRequestURI().startsWith("/api/v1/runner/")) {
            reject(response, HttpServletResponse.SC_UNAUTHORIZED, "the runner API takes a device token (hexforge device add NAME)");
            return;
        }
        Optional<TokenEntity> token = bearer != null ? tokens.lookup(bearer) : Optional.empty();
        if (token.isEmpty()) {
            response.setHeader("WWW-Authenticate", "Bearer");
            reject(response, HttpServletResponse.SC_UNAUTHORIZED, header == null ? "missing API token: send Authorization: Bearer <token>"
                    : "invalid or revoked API token");
            return;
        }
        request.setAttribute(TENANT_ATTRIBUTE, token.get().tenant);
        request.setAttribute(ADMIN_ATTRIBUTE, token.get().admin);
        chain.doFilter(request, response);
    }
}
