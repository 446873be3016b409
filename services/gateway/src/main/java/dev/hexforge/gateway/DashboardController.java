package dev.hexforge.gateway;

import dev.hexforge.contracts.JobSpecSchema;
import dev.hexforge.gateway.auth.TokenEntity;
import dev.hexforge.gateway.auth.TokenFilter;
import dev.hexforge.gateway.auth.TokenService;
import dev.hexforge.gateway.auth.UiSessionService;
import dev.hexforge.gateway.config.GatewayProperties;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import org.springframework.http.HttpHeaders;
import org.springframework.http.ResponseCookie;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

import java.io.IOException;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;

/**
 * The dashboard's server side (its pages are static files): the sign-in, where an API token entered once opens a
 * server-side session whose random secret goes in an HttpOnly, SameSite=Strict cookie that {@link TokenFilter} accepts
 * in place of the Authorization header (device tokens are not accepted), and the sign-out that closes it.
 */
@RestController
public class DashboardController {
    public static final String COOKIE = "hexforge_session";
    private final TokenService tokens;
    private final UiSessionService sessions;

    private final String exampleModel;
    private final String exampleFinetuneData;

    DashboardController(TokenService tokens, UiSessionService sessions, GatewayProperties settings) {
        this.tokens = tokens;
        this.sessions = sessions;
        this.exampleModel = settings.examples().modelPath();
        this.exampleFinetuneData = settings.examples().finetuneData();
    }

    /** What the submit form offers as a starting point (in standalone mode: the bundled tiny model and LoRA task). */
    @GetMapping("/api/v1/examples")
    Map<String, String> examples() {
        return Map.of("modelPath", exampleModel, "finetuneData", exampleFinetuneData);
    }

    /**
     * The job spec's JSON Schema (every field's type, default, limits and help), generated from the one declaration
     * the server validates against; the submit form builds its choices from it.
     */
    @GetMapping(value = "/api/v1/job-spec/schema", produces = "application/schema+json")
    String schema() {
        return SCHEMA;
    }

    private static final String SCHEMA = JobSpecSchema.jsonSchema().toPrettyString();

    /**
     * Sign-in: the API token buys a server-side session; the cookie holds the session's random secret. Only a post
     * from a page of this gateway counts (Origin or Sec-Fetch-Site), so another site cannot sign a browser in as its
     * attacker (login CSRF).
     */
    @PostMapping(value = "/ui/session", consumes = "application/x-www-form-urlencoded")
    void signIn(@RequestParam(defaultValue = "") String token, HttpServletRequest request,
                HttpServletResponse response) throws IOException {
        if (!sameOrigin(request)) {
            forbidden(response, "sign in from the dashboard's own page");
            return;
        }
        Optional<TokenEntity> t = tokens.lookup(token.trim());
        if (t.isEmpty()) {
            response.sendRedirect("/login.html?error=invalid");
            return;
        }
        response.addHeader(HttpHeaders.SET_COOKIE, cookie(sessions.open(t.get()), UiSessionService.LIFETIME).toString());
        response.sendRedirect("/");
    }

    /** Sign-out ends the session on the server too, so a copied cookie stops working at once. */
    @PostMapping("/ui/logout")
    void signOut(HttpServletRequest request, HttpServletResponse response) throws IOException {
        if (!sameOrigin(request)) {
            forbidden(response, "sign out from the dashboard's own page");
            return;
        }
        sessions.close(TokenFilter.sessionCookie(request));
        response.addHeader(HttpHeaders.SET_COOKIE, cookie("", Duration.ZERO).toString());
        response.sendRedirect("/login.html");
    }

    /**
     * Whether a form post comes from a page of this gateway: browsers send {@code Sec-Fetch-Site} and {@code Origin}
     * with every post, and another site cannot forge either. A post with neither (no browser) is refused too.
     */
    private static void forbidden(HttpServletResponse response, String message) throws IOException {
        response.setStatus(HttpServletResponse.SC_FORBIDDEN);
        response.setContentType("application/json");
        response.getWriter().write("{\"error\":\"" + message + " (a post from another site is refused)\"}");
    }

    static boolean sameOrigin(HttpServletRequest request) {
        String site = request.getHeader("Sec-Fetch-Site");
        if (site != null && !site.equals("same-origin")) {
            return false;
        }
        String origin = request.getHeader("Origin");
        if (origin == null) {
            return site != null;
        }
        String host = request.getHeader("Host");
        return host != null && (origin.equals("http://" + host) || origin.equals("https://" + host));
    }

    private static ResponseCookie cookie(String value, Duration maxAge) {
        return ResponseCookie.from(COOKIE, value).httpOnly(true).sameSite("Strict").path("/").maxAge(maxAge).build();
    }
}
