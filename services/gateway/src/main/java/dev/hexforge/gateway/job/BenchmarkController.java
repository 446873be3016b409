package dev.hexforge.gateway.job;

import dev.hexforge.contracts.ContractsJson;
import dev.hexforge.contracts.JobSpec;
import dev.hexforge.gateway.auth.TokenFilter;
import org.springframework.data.domain.PageRequest;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestAttribute;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * Benchmark results across the caller's jobs, one row per result (a device and backend), with what was measured
 * and how the model was made (quantization, compile target): the dashboard's comparison table and charts.
 */
@RestController
class BenchmarkController {
    private final AttemptRepository attempts;
    private final JobRepository jobs;

    BenchmarkController(AttemptRepository attempts, JobRepository jobs) {
        this.attempts = attempts;
        this.jobs = jobs;
    }

    @GetMapping("/api/v1/benchmarks")
    Map<String, Object> list(@RequestAttribute(TokenFilter.TENANT_ATTRIBUTE) String tenant,
                             @RequestParam(defaultValue = "200") int limit) {
        List<Map<String, Object>> rows = new ArrayList<>();
        List<AttemptEntity> found = attempts.findForTenant(tenant, "benchmark", AttemptEntity.State.COMPLETED,
                PageRequest.of(0, Math.min(Math.max(1, limit), 1000)));
        Map<UUID, JobEntity> byId = new HashMap<>();
        jobs.findAllById(found.stream().map(a -> a.jobId).distinct().toList()).forEach(j -> byId.put(j.id, j));
        for (AttemptEntity a : found) {
            JobEntity job = byId.get(a.jobId);
            if (job == null || !job.tenant.equals(tenant) || a.report == null) {
                continue;
            }
            JobSpec spec = job.spec();
            Map<?, ?> report = ContractsJson.read(a.report, Map.class);
            Object results = report.get("results");
            if (!(results instanceof List<?> list)) {
                continue;
            }
            for (Object r : list) {
                Map<String, Object> row = new LinkedHashMap<>();
                row.put("jobId", job.id.toString());
                row.put("job", job.name);
                row.put("finishedAt", a.finishedAt == null ? null : a.finishedAt.toString());
                row.put("quantization", spec.stages().contains("quantize") && spec.quantize() != null
                        ? spec.quantize().method() + " int" + spec.quantize().bits() : "float");
                row.put("target", spec.stages().contains("compile") && spec.compile() != null ? spec.compile().target() : "onnx");
                row.put("device", report.get("device"));
                row.put("deviceInfo", report.get("deviceInfo"));
                row.put("result", r);
                rows.add(row);
            }
        }
        return Map.of("benchmarks", rows);
    }
}
