package dev.hexforge.gateway.job;

import com.fasterxml.jackson.core.type.TypeReference;
import dev.hexforge.contracts.ContractsJson;
import dev.hexforge.contracts.InvalidJobSpecException;
import dev.hexforge.contracts.JobSpecReader;
import dev.hexforge.gateway.RequestBodies;
import dev.hexforge.gateway.auth.TokenFilter;
import dev.hexforge.store.ArtifactStore;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import org.springframework.data.domain.Page;
import org.springframework.data.domain.PageRequest;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestAttribute;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.servlet.mvc.method.annotation.SseEmitter;

import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/** Jobs API v1, scoped to the tenant of the caller's API token. */
@RestController
@RequestMapping("/api/v1/jobs")
class JobController {
    private final JobService jobs;
    private final JobRepository repo;
    private final JobEventHub hub;
    private final ArtifactStore store;

    JobController(JobService jobs, JobRepository repo, JobEventHub hub, ArtifactStore store) {
        this.store = store;
        this.hub = hub;
        this.jobs = jobs;
        this.repo = repo;
    }

    @PostMapping(consumes = {"application/json", "application/yaml", "application/x-yaml", "text/yaml", "text/plain"})
    ResponseEntity<Map<String, Object>> create(HttpServletRequest request,
                                               @RequestAttribute(TokenFilter.TENANT_ATTRIBUTE) String tenant) throws IOException {
        JobEntity j = jobs.submit(body(request), tenant);
        hub.jobChanged(j);
        return ResponseEntity.status(HttpStatus.CREATED).body(view(j, false));
    }

    private static String body(HttpServletRequest request) throws IOException {
        return RequestBodies.read(request, JobSpecReader.MAX_BYTES, "job document");
    }

    @ExceptionHandler(RequestBodies.TooLargeException.class)
    void tooLarge(RequestBodies.TooLargeException e, HttpServletResponse response) throws IOException {
        RequestBodies.answer(e, response);
    }

    @GetMapping
    Map<String, Object> list(@RequestAttribute(TokenFilter.TENANT_ATTRIBUTE) String tenant,
                             @RequestParam(required = false) String state,
                             @RequestParam(defaultValue = "0") int page, @RequestParam(defaultValue = "20") int size) {
        PageRequest p = PageRequest.of(Math.max(0, page), Math.min(Math.max(1, size), 200));
        Page<JobEntity> result = state == null ? repo.findByTenantOrderByCreatedAtDesc(tenant, p)
                : repo.findByTenantAndStateOrderByCreatedAtDesc(tenant, parseState(state), p);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("jobs", result.getContent().stream().map(j -> view(j, false)).toList());
        out.put("page", result.getNumber());
        out.put("size", result.getSize());
        out.put("total", result.getTotalElements());
        return out;
    }

    /** Server-sent {@code job} events ({@code {id, state}}) whenever any of the caller's jobs is created or changes. */
    @GetMapping(value = "/events", produces = "text/event-stream")
    SseEmitter allEvents(@RequestAttribute(TokenFilter.TENANT_ATTRIBUTE) String tenant) throws IOException {
        SseEmitter e = hub.openTenant(tenant);
        e.send(SseEmitter.event().name("open").data(Map.of("tenant", tenant)));
        return e;
    }

    @GetMapping("/{id}")
    Map<String, Object> get(@PathVariable UUID id, @RequestAttribute(TokenFilter.TENANT_ATTRIBUTE) String tenant) {
        return view(jobs.get(id, tenant), true);
    }

    /**
     * Server-sent events of the job: first a {@code job} event with its current view, then each stage event as it
     * arrives (see {@link JobEventHub}); the stream ends with the job.
     */
    @GetMapping(value = "/{id}/events", produces = "text/event-stream")
    SseEmitter events(@PathVariable UUID id, @RequestAttribute(TokenFilter.TENANT_ATTRIBUTE) String tenant) throws IOException {
        jobs.get(id, tenant); // 404 for another tenant's job before anything is opened
        JobEventHub.JobStream s = hub.open(id);
        JobEntity j = jobs.get(id, tenant); // read after opening, so no event falls between the view and the stream
        s.start(view(j, false), j.state != JobEntity.State.RUNNING);
        return s.emitter();
    }

    @PostMapping("/{id}/cancel")
    Map<String, Object> cancel(@PathVariable UUID id, @RequestAttribute(TokenFilter.TENANT_ATTRIBUTE) String tenant) {
        JobEntity j = Conflicts.retry(() -> jobs.cancel(id, tenant));
        hub.jobChanged(j);
        // running attempts stop on the control message; this marker stops one still queued when a service takes it
        store.putBytes(ArtifactStore.cancelledKey(j.currentAttempt.toString()), new byte[0], "application/octet-stream");
        return view(j, false);
    }

    @PostMapping("/{id}/resume")
    Map<String, Object> resume(@PathVariable UUID id, @RequestAttribute(TokenFilter.TENANT_ATTRIBUTE) String tenant) {
        JobEntity j = Conflicts.retry(() -> jobs.resume(id, tenant));
        hub.jobChanged(j);
        return view(j, false);
    }

    private static JobEntity.State parseState(String s) {
        for (JobEntity.State st : JobEntity.State.values()) {
            if (st.name().equalsIgnoreCase(s)) {
                return st;
            }
        }
        throw new IllegalArgumentException("state must be one of running, completed, failed, cancelled; got '" + s + "'");
    }

    @ExceptionHandler(IllegalArgumentException.class)
    ResponseEntity<Map<String, Object>> badParameter(IllegalArgumentException e) {
        return ResponseEntity.badRequest().body(Map.of("error", e.getMessage()));
    }

    private Map<String, Object> view(JobEntity j, boolean withAttempts) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("id", j.id.toString());
        m.put("name", j.name);
        m.put("state", j.state.name().toLowerCase());
        m.put("currentStage", j.currentStage);
        m.put("createdAt", j.createdAt.toString());
        m.put("updatedAt", j.updatedAt.toString());
        if (j.error != null && j.error.message != null) {
            m.put("error", j.error.view());
        }
        if (withAttempts) {
            m.put("spec", ContractsJson.MAPPER.convertValue(j.spec(), new TypeReference<Map<String, Object>>() { }));
            List<Map<String, Object>> attempts = jobs.attempts(j.id).stream().map(a -> {
                Map<String, Object> v = new LinkedHashMap<>();
                v.put("id", a.id.toString());
                v.put("stage", a.stage);
                v.put("attempt", a.attemptNo);
                v.put("state", a.state.name().toLowerCase());
                v.put("progress", a.progress);
                v.put("message", a.message);
                v.put("startedAt", a.startedAt.toString());
                v.put("finishedAt", a.finishedAt == null ? null : a.finishedAt.toString());
                v.put("durationMs", a.finishedAt == null ? null : a.finishedAt.toEpochMilli() - a.startedAt.toEpochMilli());
                v.put("workerStartedAt", a.workerStartedAt == null ? null : a.workerStartedAt.toString());
                v.put("workerFinishedAt", a.workerFinishedAt == null ? null : a.workerFinishedAt.toString());
                v.put("outputs", a.outputs == null ? List.of() : ContractsJson.read(a.outputs, List.class));
                v.put("report", a.report == null ? Map.of() : ContractsJson.read(a.report, Map.class));
                v.put("metrics", a.metrics == null ? Map.of() : ContractsJson.read(a.metrics, Map.class));
                if (a.error != null && a.error.message != null) {
                    v.put("error", a.error.view());
                }
                return v;
            }).toList();
            m.put("stages", attempts);
        }
        return m;
    }

    @ExceptionHandler(InvalidJobSpecException.class)
    ResponseEntity<Map<String, Object>> invalid(InvalidJobSpecException e) {
        return ResponseEntity.badRequest().body(Map.of("error", "invalid job spec",
                "problems", e.problems().stream().map(p -> Map.of("path", p.path(), "message", p.message())).toList()));
    }

    @ExceptionHandler(JobNotFoundException.class)
    ResponseEntity<Map<String, Object>> notFound(JobNotFoundException e) {
        return ResponseEntity.status(HttpStatus.NOT_FOUND).body(Map.of("error", e.getMessage()));
    }

    @ExceptionHandler(IllegalStateException.class)
    ResponseEntity<Map<String, Object>> conflict(IllegalStateException e) {
        return ResponseEntity.status(HttpStatus.CONFLICT).body(Map.of("error", e.getMessage()));
    }
}
