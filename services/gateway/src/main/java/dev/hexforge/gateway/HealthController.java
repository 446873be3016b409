package dev.hexforge.gateway;

import dev.hexforge.gateway.config.Readiness;
import dev.hexforge.web.UnavailableFilter;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;

import java.util.LinkedHashMap;
import java.util.Map;

/** The two endpoints that need no token: liveness (the process answers) and readiness (it can serve). */
@RestController
class HealthController {
    private final Readiness readiness;

    HealthController(Readiness readiness) {
        this.readiness = readiness;
    }

    @GetMapping("/api/v1/health")
    Map<String, String> health() {
        return Map.of("status", "ok");
    }

    /** 200 when the database, the broker and the object store all answer; else 503 with Retry-After, naming which not. */
    @GetMapping("/api/v1/ready")
    ResponseEntity<Map<String, String>> ready() {
        Readiness.Report r = readiness.check();
        Map<String, String> body = new LinkedHashMap<>();
        body.put("status", r.ready() ? "ready" : "unavailable");
        body.putAll(r.dependencies());
        if (r.ready()) {
            return ResponseEntity.ok(body);
        }
        return ResponseEntity.status(HttpStatus.SERVICE_UNAVAILABLE)
                .header("Retry-After", String.valueOf(UnavailableFilter.RETRY_AFTER_SECONDS)).body(body);
    }
}
