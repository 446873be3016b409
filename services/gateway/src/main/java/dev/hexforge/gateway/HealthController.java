package dev.hexforge.gateway;

import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;

import java.util.Map;

/** The one endpoint that needs no token. */
@RestController
class HealthController {
    @GetMapping("/api/v1/health")
    Map<String, String> health() {
        return Map.of("status", "ok");
    }
}
