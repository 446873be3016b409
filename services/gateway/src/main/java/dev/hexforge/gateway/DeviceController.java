package dev.hexforge.gateway;

import dev.hexforge.contracts.ContractsJson;
import dev.hexforge.contracts.DeviceMessages;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestAttribute;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;

/**
 * Devices API v1. Users add and list their device runners ({@code /api/v1/devices}, API token); runners register,
 * heartbeat, long-poll for benchmark tasks and report results ({@code /api/v1/runner/...}, device token).
 */
@RestController
class DeviceController {
    private final DeviceService devices;

    DeviceController(DeviceService devices) {
        this.devices = devices;
    }

    @PostMapping("/api/v1/devices")
    ResponseEntity<Map<String, Object>> add(@RequestBody Map<String, Object> body, @RequestAttribute(TokenFilter.TENANT_ATTRIBUTE) String tenant) {
        String name = body.get("name") instanceof String n ? n : null;
        String token = devices.add(tenant, name);
        return ResponseEntity.status(HttpStatus.CREATED).body(Map.of("name", name, "tenant", tenant, "token", token,
                "note", "give the token to the device's runner (HEXFORGE_DEVICE_TOKEN); it is not shown again"));
    }

    @GetMapping("/api/v1/devices")
    Map<String, Object> list(@RequestAttribute(TokenFilter.TENANT_ATTRIBUTE) String tenant) {
        return Map.of("devices", devices.list(tenant).stream().map(d -> {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("id", d.id.toString());
            m.put("name", d.name);
            m.put("info", d.info == null ? null : ContractsJson.read(d.info, Map.class));
            m.put("lastSeen", d.lastSeen == null ? null : d.lastSeen.toString());
            m.put("online", d.lastSeen != null && d.lastSeen.isAfter(Instant.now().minusSeconds(60)));
            m.put("currentTask", d.currentTask == null ? null : d.currentTask.toString());
            return m;
        }).toList());
    }

    @PostMapping("/api/v1/runner/register")
    Map<String, Object> register(@RequestBody DeviceMessages.DeviceInfo info, @RequestAttribute(TokenFilter.DEVICE_ATTRIBUTE) UUID device) {
        devices.register(device, info);
        return Map.of("registered", device.toString());
    }

    @PostMapping("/api/v1/runner/heartbeat")
    Map<String, Object> heartbeat(@RequestAttribute(TokenFilter.DEVICE_ATTRIBUTE) UUID device) {
        devices.heartbeat(device);
        return Map.of("ok", true);
    }

    /** Long poll: a task as soon as one this device can run is queued, or 204 after {@code wait} seconds (at most 30). */
    @GetMapping("/api/v1/runner/tasks/next")
    ResponseEntity<DeviceMessages.BenchmarkTask> next(@RequestParam(defaultValue = "25") int wait,
                                                      @RequestAttribute(TokenFilter.DEVICE_ATTRIBUTE) UUID device) throws InterruptedException {
        long deadline = System.nanoTime() + Math.min(30, Math.max(0, wait)) * 1_000_000_000L;
        do {
            Optional<DeviceMessages.BenchmarkTask> t = devices.lease(device);
            if (t.isPresent()) {
                return ResponseEntity.ok(t.get());
            }
            Thread.sleep(250);
        } while (System.nanoTime() < deadline);
        return ResponseEntity.noContent().build();
    }

    @PostMapping("/api/v1/runner/tasks/{id}/result")
    ResponseEntity<Map<String, Object>> result(@PathVariable UUID id, @RequestBody DeviceMessages.BenchmarkOutcome outcome,
                                               @RequestAttribute(TokenFilter.DEVICE_ATTRIBUTE) UUID device) {
        if (!devices.report(device, id, outcome)) {
            return ResponseEntity.status(HttpStatus.CONFLICT).body(Map.of("error", "task " + id
                    + " is not leased to this device (its lease expired, or the job was cancelled)"));
        }
        return ResponseEntity.ok(Map.of("accepted", id.toString()));
    }

    @ExceptionHandler(IllegalArgumentException.class)
    ResponseEntity<Map<String, Object>> bad(IllegalArgumentException e) {
        return ResponseEntity.badRequest().body(Map.of("error", e.getMessage()));
    }

    @ExceptionHandler(IllegalStateException.class)
    ResponseEntity<Map<String, Object>> conflict(IllegalStateException e) {
        return ResponseEntity.status(HttpStatus.CONFLICT).body(Map.of("error", e.getMessage()));
    }
}
