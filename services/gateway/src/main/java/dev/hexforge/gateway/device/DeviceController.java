package dev.hexforge.gateway.device;

import dev.hexforge.contracts.ApiMessages;
import dev.hexforge.contracts.ContractsJson;
import dev.hexforge.contracts.DeviceMessages;
import dev.hexforge.gateway.RequestBodies;
import dev.hexforge.gateway.auth.TokenFilter;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.http.converter.HttpMessageNotReadableException;
import org.springframework.web.bind.annotation.DeleteMapping;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestAttribute;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.context.request.async.DeferredResult;

import java.io.IOException;
import java.time.Duration;
import java.time.Instant;
import java.util.Collection;
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
    private final TaskPolls polls;

    DeviceController(DeviceService devices, TaskPolls polls) {
        this.devices = devices;
        this.polls = polls;
    }

    @PostMapping("/api/v1/devices")
    ResponseEntity<Map<String, Object>> add(@RequestBody String body, @RequestAttribute(TokenFilter.TENANT_ATTRIBUTE) String tenant) {
        String name = DeviceMessages.read(body, ApiMessages.NewDevice.class).name();
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

    /** Removes a device of the caller's tenant: its token stops working at once and a task it held is queued again. */
    @DeleteMapping("/api/v1/devices/{id}")
    ResponseEntity<Map<String, Object>> remove(@PathVariable UUID id, @RequestAttribute(TokenFilter.TENANT_ATTRIBUTE) String tenant) {
        if (!devices.remove(id, tenant)) {
            return ResponseEntity.status(HttpStatus.NOT_FOUND).body(Map.of("error", "no device " + id));
        }
        polls.cancel(id);
        return ResponseEntity.ok(Map.of("removed", id.toString()));
    }

    /** A runner message read strictly ({@link DeviceMessages#read}): a 400 naming the field for anything off. */
    private static <T extends DeviceMessages.Checked> T message(HttpServletRequest request, Class<T> type)
            throws IOException {
        return DeviceMessages.read(RequestBodies.read(request, DeviceMessages.MAX_BYTES, "runner message"), type);
    }

    @PostMapping("/api/v1/runner/register")
    Map<String, Object> register(HttpServletRequest request,
                                 @RequestAttribute(TokenFilter.DEVICE_ATTRIBUTE) UUID device) throws IOException {
        DeviceMessages.DeviceInfo info = message(request, DeviceMessages.DeviceInfo.class);
        devices.register(device, info);
        return Map.of("registered", device.toString());
    }

    @PostMapping("/api/v1/runner/heartbeat")
    Map<String, Object> heartbeat(HttpServletRequest request,
                                  @RequestAttribute(TokenFilter.DEVICE_ATTRIBUTE) UUID device) throws IOException {
        String body = RequestBodies.read(request, DeviceMessages.MAX_BYTES, "runner message");
        DeviceMessages.Heartbeat beat = body.isBlank() ? null : DeviceMessages.read(body, DeviceMessages.Heartbeat.class);
        devices.heartbeat(device, beat == null ? null : beat.taskId());
        return Map.of("ok", true);
    }

    /**
     * Long poll: a task as soon as one this device can run is queued, or 204 after {@code wait} seconds (at most 30).
     * The request thread is not held while it waits, and a device has one poll waiting at a time (another is 409).
     */
    @GetMapping("/api/v1/runner/tasks/next")
    DeferredResult<ResponseEntity<?>> next(@RequestParam(defaultValue = "25") int wait,
                                                                                         @RequestAttribute(TokenFilter.DEVICE_ATTRIBUTE) UUID device) {
        return polls.open(device, Duration.ofSeconds(Math.min(30, Math.max(0, wait))));
    }

    @PostMapping("/api/v1/runner/tasks/{id}/result")
    ResponseEntity<Map<String, Object>> result(@PathVariable UUID id, HttpServletRequest request,
                                               @RequestAttribute(TokenFilter.DEVICE_ATTRIBUTE) UUID device) throws IOException {
        DeviceMessages.BenchmarkOutcome outcome = message(request, DeviceMessages.BenchmarkOutcome.class);
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

    @ExceptionHandler(RequestBodies.TooLargeException.class)
    void tooLarge(RequestBodies.TooLargeException e, HttpServletResponse response) throws IOException {
        RequestBodies.answer(e, response);
    }

    @ExceptionHandler(HttpMessageNotReadableException.class)
    ResponseEntity<Map<String, Object>> unreadable(HttpMessageNotReadableException e) {
        return ResponseEntity.badRequest().body(Map.of("error", unreadableField(e.getCause())
                .orElse("the body is not the expected JSON object")));
    }

    /** For JSON of the right shape with a value of the wrong type: "taskId: must be a string", naming the field. */
    static Optional<String> unreadableField(Throwable cause) {
        if (!(cause instanceof tools.jackson.databind.exc.MismatchedInputException m) || m.getPath().isEmpty()) {
            return Optional.empty();
        }
        StringBuilder field = new StringBuilder();
        for (tools.jackson.core.JacksonException.Reference r : m.getPath()) { // Spring 7 reads bodies with Jackson 3
            if (r.getPropertyName() != null) {
                field.append(field.isEmpty() ? "" : ".").append(r.getPropertyName());
            } else {
                field.append('[').append(r.getIndex()).append(']');
            }
        }
        Class<?> type = m.getTargetType();
        String expected = type == null ? "of another type"
                : type == String.class ? "a string"
                : type == long.class || type == Long.class || type == int.class || type == Integer.class ? "a whole number"
                : Collection.class.isAssignableFrom(type) ? "a list"
                : "a JSON object";
        return Optional.of(field + ": must be " + expected);
    }

    @ExceptionHandler(IllegalStateException.class)
    ResponseEntity<Map<String, Object>> conflict(IllegalStateException e) {
        return ResponseEntity.status(HttpStatus.CONFLICT).body(Map.of("error", e.getMessage()));
    }
}
