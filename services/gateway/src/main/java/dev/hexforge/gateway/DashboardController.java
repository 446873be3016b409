package dev.hexforge.gateway;

import jakarta.servlet.http.HttpServletResponse;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.http.HttpHeaders;
import org.springframework.http.ResponseCookie;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

import java.io.IOException;
import java.time.Duration;
import java.util.Map;

/**
 * The dashboard's server side (its pages are static files): the sign-in, where an API token entered once becomes an HttpOnly, SameSite=Strict session cookie that
 * {@link TokenFilter} accepts in place of the Authorization header (device tokens are not accepted).
 */
@RestController
class DashboardController {
    static final String COOKIE = "hexforge_session";
    private static final Duration MAX_AGE = Duration.ofHours(12);
    private final TokenService tokens;

    private final String exampleModel;
    private final String exampleFinetuneData;

    DashboardController(TokenService tokens, @Value("${hexforge.examples.model-path:}") String exampleModel,
                        @Value("${hexforge.examples.finetune-data:}") String exampleFinetuneData) {
        this.tokens = tokens;
        this.exampleModel = exampleModel;
        this.exampleFinetuneData = exampleFinetuneData;
    }

    /** What the submit form offers as a starting point (in standalone mode: the bundled tiny model and LoRA task). */
    @GetMapping("/api/v1/examples")
    Map<String, String> examples() {
        return Map.of("modelPath", exampleModel, "finetuneData", exampleFinetuneData);
    }

    @PostMapping(value = "/ui/session", consumes = "application/x-www-form-urlencoded")
    void signIn(@RequestParam(defaultValue = "") String token, HttpServletResponse response) throws IOException {
        String t = token.trim();
        if (!t.startsWith(TokenService.PREFIX) || tokens.lookup(t).isEmpty()) {
            response.sendRedirect("/login.html?error=invalid");
            return;
        }
        response.addHeader(HttpHeaders.SET_COOKIE, cookie(t, MAX_AGE).toString());
        response.sendRedirect("/");
    }

    @PostMapping("/ui/logout")
    void signOut(HttpServletResponse response) throws IOException {
        response.addHeader(HttpHeaders.SET_COOKIE, cookie("", Duration.ZERO).toString());
        response.sendRedirect("/login.html");
    }

    private static ResponseCookie cookie(String value, Duration maxAge) {
        return ResponseCookie.from(COOKIE, value).httpOnly(true).sameSite("Strict").path("/").maxAge(maxAge).build();
    }
}
