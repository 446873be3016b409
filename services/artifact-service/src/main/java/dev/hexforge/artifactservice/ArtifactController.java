package dev.hexforge.artifactservice;

import dev.hexforge.signing.ModelSignature;
import dev.hexforge.store.ArtifactStore;
import org.springframework.data.domain.Page;
import org.springframework.data.domain.PageRequest;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/** The internal API the gateway proxies: the catalogue (scoped to the tenant it names), download URLs and keys. */
@RestController
@RequestMapping("/internal/v1")
class ArtifactController {
    private final ArtifactRepository repo;
    private final ArtifactStore store;
    private final SigningKeys keys;
    private final Duration ttl;

    ArtifactController(ArtifactRepository repo, ArtifactStore store, SigningKeys keys,
                       ArtifactServiceProperties settings) {
        this.repo = repo;
        this.store = store;
        this.keys = keys;
        this.ttl = settings.downloadUrlTtl();
    }

    /** Not found, or another tenant's (the same answer, so ids of other tenants reveal nothing). */
    static final class ArtifactNotFoundException extends RuntimeException {
        ArtifactNotFoundException(String message) {
            super(message);
        }
    }

    @GetMapping("/artifacts")
    Map<String, Object> list(@RequestParam String tenant, @RequestParam(required = false) UUID job,
                             @RequestParam(defaultValue = "0") int page, @RequestParam(defaultValue = "50") int size) {
        PageRequest p = PageRequest.of(Math.max(0, page), Math.min(Math.max(1, size), 200));
        Page<ArtifactEntity> result = job == null ? repo.findByTenantOrderByCreatedAtDesc(tenant, p)
                : repo.findByTenantAndJobIdOrderByCreatedAtDesc(tenant, job, p);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("artifacts", result.getContent().stream().map(ArtifactController::summary).toList());
        out.put("page", result.getNumber());
        out.put("size", result.getSize());
        out.put("total", result.getTotalElements());
        return out;
    }

    @GetMapping("/artifacts/{id}")
    Map<String, Object> get(@PathVariable UUID id, @RequestParam String tenant) {
        ArtifactEntity a = find(id, tenant);
        Map<String, Object> m = summary(a);
        List<Map<String, Object>> files = new ArrayList<>();
        for (ArtifactStore.Entry e : Catalogue.signedFiles(store.manifest(a.sha256))) {
            files.add(Map.of("path", e.path(), "sha256", e.sha256(), "size", e.size()));
        }
        m.put("files", files);
        return m;
    }

    /** A presigned URL for one file of the artifact ({@code model.sig} included), valid for the configured time. */
    @GetMapping("/artifacts/{id}/url")
    Map<String, Object> url(@PathVariable UUID id, @RequestParam String tenant, @RequestParam String path) {
        ArtifactEntity a = find(id, tenant);
        String key;
        if (path.equals(ModelSignature.DEFAULT_SIGNATURE)) {
            key = a.signatureKey;
        } else {
            key = Catalogue.signedFiles(store.manifest(a.sha256)).stream().filter(e -> e.path().equals(path)).findFirst()
                    .map(e -> ArtifactStore.key(e.sha256()))
                    .orElseThrow(() -> new ArtifactNotFoundException("artifact " + id + " has no file '" + path + "'"));
        }
        return Map.of("url", store.presignedGet(key, ttl, path.substring(path.lastIndexOf('/') + 1)), "expiresAt", Instant.now().plus(ttl).toString());
    }

    @GetMapping("/keys")
    Map<String, Object> keys() {
        return Map.of("keys", keys.publicKeys().stream().map(k -> Map.of("hint", k.hint(), "pem", k.pem(), "current", k.current()))
                .toList());
    }

    private ArtifactEntity find(UUID id, String tenant) {
        return repo.findByIdAndTenant(id, tenant).orElseThrow(() -> new ArtifactNotFoundException("no artifact " + id));
    }

    private static Map<String, Object> summary(ArtifactEntity a) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("id", a.id.toString());
        m.put("jobId", a.jobId.toString());
        m.put("stage", a.stage);
        m.put("kind", a.kind);
        m.put("sha256", a.sha256);
        m.put("size", a.size);
        m.put("files", a.fileCount);
        m.put("createdAt", a.createdAt.toString());
        Map<String, Object> sig = new LinkedHashMap<>();
        sig.put("file", ModelSignature.DEFAULT_SIGNATURE);
        sig.put("rootDigest", a.rootDigest);
        sig.put("keyHint", a.keyHint);
        sig.put("provenance", a.provenance);
        m.put("signature", sig);
        return m;
    }

    @ExceptionHandler(ArtifactNotFoundException.class)
    ResponseEntity<Map<String, Object>> notFound(ArtifactNotFoundException e) {
        return ResponseEntity.status(HttpStatus.NOT_FOUND).body(Map.of("error", e.getMessage()));
    }
}
