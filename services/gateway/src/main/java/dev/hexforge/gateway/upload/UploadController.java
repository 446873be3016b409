package dev.hexforge.gateway.upload;

import dev.hexforge.gateway.auth.TokenFilter;
import dev.hexforge.web.UnavailableFilter;
import jakarta.servlet.http.HttpServletRequest;
import org.springframework.data.domain.Page;
import org.springframework.data.domain.PageRequest;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestAttribute;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.UUID;

/**
 * Uploads API v1: {@code POST /api/v1/uploads?name=model.tar.gz} with the archive as the raw request body (what
 * {@code curl --data-binary @FILE}, the CLI and a browser's {@code fetch(url, {body: file})} send), so it streams
 * through without multipart parsing. Then {@code model.upload: ID} in a job spec.
 */
@RestController
class UploadController {
    private final UploadService service;
    private final UploadRepository repo;

    UploadController(UploadService service, UploadRepository repo) {
        this.service = service;
        this.repo = repo;
    }

    @PostMapping("/api/v1/uploads")
    ResponseEntity<Map<String, Object>> upload(@RequestParam(required = false) String name, HttpServletRequest request,
                                               @RequestAttribute(TokenFilter.TENANT_ATTRIBUTE) String tenant) throws IOException {
        String type = request.getContentType();
        if (type != null && type.startsWith("multipart/")) {
            return ResponseEntity.status(HttpStatus.UNSUPPORTED_MEDIA_TYPE).body(Map.of("error",
                    "send the archive as the raw body (Content-Type: application/octet-stream), not as a multipart form"));
        }
        UploadEntity u = service.receive(tenant, name, request.getContentLengthLong(), request.getInputStream());
        return ResponseEntity.status(HttpStatus.CREATED).body(view(u));
    }

    @GetMapping("/api/v1/uploads")
    Map<String, Object> list(@RequestAttribute(TokenFilter.TENANT_ATTRIBUTE) String tenant,
                             @RequestParam(defaultValue = "0") int page, @RequestParam(defaultValue = "50") int size) {
        Page<UploadEntity> p = repo.findByTenantOrderByCreatedAtDesc(tenant, PageRequest.of(Math.max(0, page), Math.min(Math.max(1, size), 200)));
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("uploads", p.getContent().stream().map(UploadController::view).toList());
        out.put("page", p.getNumber());
        out.put("size", p.getSize());
        out.put("total", p.getTotalElements());
        return out;
    }

    @GetMapping("/api/v1/uploads/{id}")
    ResponseEntity<Map<String, Object>> get(@PathVariable UUID id, @RequestAttribute(TokenFilter.TENANT_ATTRIBUTE) String tenant) {
        return repo.findByIdAndTenant(id, tenant).map(u -> ResponseEntity.ok(view(u)))
                .orElse(ResponseEntity.status(HttpStatus.NOT_FOUND).body(Map.of("error", "no upload " + id)));
    }

    static Map<String, Object> view(UploadEntity u) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("id", u.id.toString());
        m.put("name", u.name);
        m.put("size", u.size);
        m.put("sha256", u.sha256);
        m.put("format", u.format);
        m.put("files", u.files);
        m.put("unpackedSize", u.unpackedSize);
        m.put("createdAt", u.createdAt.toString());
        return m;
    }

    @ExceptionHandler(UploadService.UploadRejectedException.class)
    ResponseEntity<Map<String, Object>> rejected(UploadService.UploadRejectedException e) {
        ResponseEntity.BodyBuilder b = ResponseEntity.status(e.status);
        if (e.status == 413) {
            b.header("Connection", "close"); // stop a client that is still sending
        } else if (e.status == 503) { // the object store is away: nothing was kept, the same upload can be sent again
            b.header("Retry-After", String.valueOf(UnavailableFilter.RETRY_AFTER_SECONDS));
        }
        return b.body(Map.of("error", e.getMessage()));
    }
}
