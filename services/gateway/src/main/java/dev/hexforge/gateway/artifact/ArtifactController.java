package dev.hexforge.gateway.artifact;

import dev.hexforge.gateway.auth.TokenFilter;
import dev.hexforge.web.UnavailableFilter;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.RequestAttribute;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

import java.net.URI;
import java.util.Map;
import java.util.UUID;

/**
 * Artifacts API v1: the caller's tenant's artifacts, their files and signature, downloads as redirects to
 * short-lived presigned storage URLs, and the public keys that verify the signatures.
 */
@RestController
class ArtifactController {
    private final ArtifactServiceClient artifacts;

    ArtifactController(ArtifactServiceClient artifacts) {
        this.artifacts = artifacts;
    }

    @GetMapping("/api/v1/artifacts")
    Map<String, Object> list(@RequestAttribute(TokenFilter.TENANT_ATTRIBUTE) String tenant,
                             @RequestParam(required = false) UUID job,
                             @RequestParam(defaultValue = "0") int page, @RequestParam(defaultValue = "50") int size) {
        return artifacts.get(u -> {
            u.path("/internal/v1/artifacts").queryParam("tenant", tenant).queryParam("page", page).queryParam("size", size);
            if (job != null) {
                u.queryParam("job", job);
            }
            return u.build();
        });
    }

    @GetMapping("/api/v1/artifacts/{id}")
    Map<String, Object> get(@PathVariable UUID id, @RequestAttribute(TokenFilter.TENANT_ATTRIBUTE) String tenant) {
        return artifacts.get(u -> u.path("/internal/v1/artifacts/{id}").queryParam("tenant", "{tenant}")
                .build(Map.of("id", id, "tenant", tenant)));
    }

    /** 302 to a presigned URL of one file; {@code GET /api/v1/artifacts/{id}} lists the files. */
    @GetMapping("/api/v1/artifacts/{id}/download")
    ResponseEntity<Map<String, Object>> download(@PathVariable UUID id, @RequestParam(required = false) String path,
                                                 @RequestAttribute(TokenFilter.TENANT_ATTRIBUTE) String tenant) {
        if (path == null || path.isBlank()) {
            return ResponseEntity.badRequest().body(Map.of("error", "name the file to download with ?path=...; GET /api/v1/artifacts/"
                    + id + " lists them ('hexforge download " + id + "' fetches and verifies the whole folder)"));
        }
        if (path.length() > 1024 || path.chars().anyMatch(c -> c < 0x20 || c == 0x7f)) {
            return ResponseEntity.badRequest().body(Map.of("error", "path must be a file of the artifact: at most 1024 printable characters"));
        }
        // values go in as template variables, so braces or percent signs in them stay text
        Map<String, Object> url = artifacts.get(u -> u.path("/internal/v1/artifacts/{id}/url").queryParam("tenant", "{tenant}")
                .queryParam("path", "{path}").build(Map.of("id", id, "tenant", tenant, "path", path)));
        return ResponseEntity.status(HttpStatus.FOUND).header(HttpHeaders.LOCATION, URI.create((String) url.get("url")).toString())
                .header("X-Expires-At", String.valueOf(url.get("expiresAt"))).body(url);
    }

    @GetMapping("/api/v1/keys")
    Map<String, Object> keys() {
        return artifacts.get(u -> u.path("/internal/v1/keys").build());
    }

    @ExceptionHandler(ArtifactServiceClient.ArtifactServiceException.class)
    ResponseEntity<Map<String, Object>> failed(ArtifactServiceClient.ArtifactServiceException e) {
        ResponseEntity.BodyBuilder b = ResponseEntity.status(e.status);
        if (e.status == HttpStatus.SERVICE_UNAVAILABLE.value()) { // it is away, or its database or store is: worth trying again
            b.header(HttpHeaders.RETRY_AFTER, String.valueOf(UnavailableFilter.RETRY_AFTER_SECONDS));
        }
        return b.body(e.body);
    }
}
