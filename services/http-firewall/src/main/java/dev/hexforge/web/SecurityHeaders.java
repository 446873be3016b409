package dev.hexforge.web;

import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;

/**
 * The headers every response of the gateway and the artifact service carries (set by {@link RequestFirewall}, the
 * first filter, so refusals and redirects have them too): a Content-Security-Policy that allows scripts, styles and
 * everything else only from the service itself (no inline script or style; the dashboard has none), frames denied
 * ({@code frame-ancestors 'none'} and {@code X-Frame-Options: DENY}), {@code nosniff}, and no referrer sent to other
 * sites ({@code same-origin}: under {@code no-referrer} a browser sends {@code Origin: null} with the dashboard's own
 * form posts, and the sign-in's same-origin check must see the origin). Swagger UI (the API document's viewer, not the dashboard) styles its own elements inline, so its pages alone
 * allow inline styles.
 */
public final class SecurityHeaders {
    /** The policy of every response but Swagger UI's. */
    public static final String POLICY = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
            + "connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";
    /** Swagger UI's pages: the same, with inline styles. */
    static final String SWAGGER_POLICY = POLICY.replace("style-src 'self'", "style-src 'self' 'unsafe-inline'");

    private SecurityHeaders() {
    }

    static void apply(HttpServletRequest request, HttpServletResponse response) {
        String path = request.getRequestURI();
        boolean swagger = path != null && (path.startsWith("/swagger-ui") || path.equals("/swagger-ui.html"));
        response.setHeader("Content-Security-Policy", swagger ? SWAGGER_POLICY : POLICY);
        response.setHeader("X-Frame-Options", "DENY");
        response.setHeader("X-Content-Type-Options", "nosniff");
        response.setHeader("Referrer-Policy", "same-origin");
    }
}
