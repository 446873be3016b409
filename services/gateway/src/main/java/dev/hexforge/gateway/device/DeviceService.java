package dev.hexforge.gateway.device;

import dev.hexforge.contracts.ContractsJson;
import dev.hexforge.contracts.DeviceMessages;
import dev.hexforge.contracts.ErrorCode;
import dev.hexforge.contracts.Stage;
import dev.hexforge.contracts.StageEvents;
import dev.hexforge.contracts.Topics;
import dev.hexforge.gateway.auth.DeviceTokens;
import dev.hexforge.gateway.auth.TokenService;
import dev.hexforge.gateway.config.GatewayProperties;
import dev.hexforge.gateway.outbox.Outbox;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.scheduling.annotation.Scheduled;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;

import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;

/**
 * Device runners and their benchmark tasks. A runner (token from {@code hexforge device add}) registers what it offers,
 * heartbeats, and leases queued tasks of its tenant that it can run (its backends, and the device or SoC the job asked
 * for). A lease lasts {@code hexforge.device-lease} and heartbeats extend it; a runner that dies mid-task loses the
 * lease and the task is queued again. Start and result reach the job as stage events, like any stage service's.
 */
@Service
public class DeviceService implements DeviceTokens {
    private static final Logger LOG = LoggerFactory.getLogger(DeviceService.class);
    private final DeviceRepository devices;
    private final BenchmarkTaskRepository tasks;
    private final Outbox outbox;
    private final Duration lease;
    private final int maxLeaseLosses;

    DeviceService(DeviceRepository devices, BenchmarkTaskRepository tasks, Outbox outbox, GatewayProperties settings) {
        this.devices = devices;
        this.tasks = tasks;
        this.outbox = outbox;
        this.lease = settings.deviceLease();
        this.maxLeaseLosses = settings.maxAttempts();
    }

    /** Adds a device for the tenant and returns its token (shown once). */
    @Transactional
    public String add(String tenant, String name) {
        if (name == null || !name.matches("[A-Za-z0-9._-]{1,100}")) {
            throw new IllegalArgumentException("device name must be 1-100 letters, digits, '.', '_' or '-'");
        }
        if (devices.findByTenantOrderByNameAsc(tenant).stream().anyMatch(d -> d.name.equals(name))) {
            throw new IllegalStateException("device '" + name + "' exists already");
        }
        String token = TokenService.newSecret(PREFIX);
        DeviceEntity d = new DeviceEntity();
        d.id = UUID.randomUUID();
        d.tenant = tenant;
        d.name = name;
        d.tokenHash = TokenService.hash(token);
        d.createdAt = Instant.now();
        devices.save(d);
        return token;
    }

    @Override
    public Optional<DeviceTokens.Device> device(String token) {
        return token != null && token.startsWith(PREFIX)
                ? devices.findByTokenHash(TokenService.hash(token)).map(d -> new DeviceTokens.Device(d.id, d.tenant))
                : Optional.empty();
    }

    List<DeviceEntity> list(String tenant) {
        return devices.findByTenantOrderByNameAsc(tenant);
    }

    /** Removes a device of the tenant (false when there is none): its token stops working; a task it held is queued again. */
    @Transactional
    public boolean remove(UUID id, String tenant) {
        Optional<DeviceEntity> d = devices.findById(id).filter(x -> x.tenant.equals(tenant));
        d.ifPresent(x -> {
            tasks.findByDeviceIdAndState(id, BenchmarkTaskEntity.State.LEASED).forEach(t -> {
                t.state = BenchmarkTaskEntity.State.QUEUED;
                t.deviceId = null;
                t.leaseUntil = null;
            });
            devices.delete(x);
            LOG.info("device {} ({}) removed", x.name, x.tenant);
        });
        return d.isPresent();
    }

    /**
     * A runner starting up: a task its device still holds was its predecessor's, which died with it, so the task is
     * let go at once (a lost lease, as if it had expired) instead of after the lease.
     */
    @Transactional
    public void register(UUID device, DeviceMessages.DeviceInfo info) {
        DeviceEntity d = devices.findById(device).orElseThrow();
        d.info = ContractsJson.write(info);
        d.lastSeen = Instant.now();
        LOG.info("device {} ({}) registered: {}", d.name, d.tenant, info.backends());
        if (d.currentTask != null) {
            tasks.findById(d.currentTask).filter(t -> t.state == BenchmarkTaskEntity.State.LEASED && device.equals(t.deviceId))
                    .ifPresent(t -> loseLease(t, "its runner started afresh"));
            d.currentTask = null;
        }
    }

    /** Marks the runner alive and extends the lease of the task it says it runs (none when it names none). */
    @Transactional
    public void heartbeat(UUID device, String runningTask) {
        DeviceEntity d = devices.findById(device).orElseThrow();
        d.lastSeen = Instant.now();
        if (d.currentTask != null && d.currentTask.toString().equals(runningTask)) {
            tasks.findById(d.currentTask).filter(t -> t.state == BenchmarkTaskEntity.State.LEASED && device.equals(t.deviceId))
                    .ifPresent(t -> {
                        t.leaseUntil = Instant.now().plus(lease);
                        // the attempt's heartbeat, so the gateway does not take a long benchmark for a stalled one
                        emit(new StageEvents.Progress(StageEvents.SCHEMA_VERSION, t.jobId.toString(), t.id.toString(), Stage.BENCHMARK,
                                Instant.now(), -1, "running on device " + d.name, Map.of()));
                    });
        }
    }

    /** Whether a device of the tenant offers the backend (for refusing a benchmark nobody could run). */
    public boolean offers(String tenant, String backend) {
        return devices.findByTenantOrderByNameAsc(tenant).stream().map(d -> d.info == null ? null
                : ContractsJson.read(d.info, DeviceMessages.DeviceInfo.class)).anyMatch(i -> i != null && i.backends() != null
                && i.backends().contains(backend));
    }

    /** Queues the benchmark attempt for a runner (called by the job state machine, in its transaction). */
    public void queue(UUID attemptId, UUID jobId, String tenant, DeviceMessages.BenchmarkTask task, String selector) {
        BenchmarkTaskEntity t = new BenchmarkTaskEntity();
        t.id = attemptId;
        t.jobId = jobId;
        t.tenant = tenant;
        t.task = ContractsJson.write(task);
        t.selector = selector;
        t.state = BenchmarkTaskEntity.State.QUEUED;
        t.createdAt = Instant.now();
        tasks.save(t);
    }

    /** The oldest queued task of the device's tenant that it can run, leased to it; empty when there is none. */
    @Transactional
    public Optional<DeviceMessages.BenchmarkTask> lease(UUID device) {
        DeviceEntity d = devices.findById(device).orElseThrow();
        d.lastSeen = Instant.now();
        if (d.info == null) {
            return Optional.empty();
        }
        DeviceMessages.DeviceInfo info = ContractsJson.read(d.info, DeviceMessages.DeviceInfo.class);
        if (info.backends() == null) { // registered before registrations were checked
            return Optional.empty();
        }
        for (BenchmarkTaskEntity t : tasks.findByTenantAndStateOrderByCreatedAtAsc(d.tenant, BenchmarkTaskEntity.State.QUEUED)) {
            DeviceMessages.BenchmarkTask task = ContractsJson.read(t.task, DeviceMessages.BenchmarkTask.class);
            boolean selected = t.selector == null || t.selector.equalsIgnoreCase(d.name)
                    || (info.soc() != null && t.selector.equalsIgnoreCase(info.soc()));
            if (selected && info.backends().containsAll(task.backends())) {
                t.state = BenchmarkTaskEntity.State.LEASED;
                t.deviceId = d.id;
                t.leaseUntil = Instant.now().plus(lease);
                d.currentTask = t.id;
                emit(new StageEvents.Progress(StageEvents.SCHEMA_VERSION, task.jobId(), task.taskId(), Stage.BENCHMARK, Instant.now(),
                        0, "running on device " + d.name + " (" + String.join(", ", task.backends()) + ")", Map.of()));
                return Optional.of(task);
            }
        }
        return Optional.empty();
    }

    /** A runner's result for a task it holds: the attempt completes with the results, or fails with the error. */
    @Transactional
    public boolean report(UUID device, UUID taskId, DeviceMessages.BenchmarkOutcome outcome) {
        DeviceEntity d = devices.findById(device).orElseThrow();
        BenchmarkTaskEntity t = tasks.findById(taskId).orElse(null);
        if (t == null || t.state != BenchmarkTaskEntity.State.LEASED || !device.equals(t.deviceId)) {
            return false;
        }
        t.state = BenchmarkTaskEntity.State.DONE;
        d.currentTask = null;
        d.lastSeen = Instant.now();
        if (outcome.error() != null) {
            emit(new StageEvents.Failed(StageEvents.SCHEMA_VERSION, t.jobId.toString(), t.id.toString(), Stage.BENCHMARK, Instant.now(),
                    outcome.error(), Map.of("device", d.name)));
        } else {
            Map<String, Object> report = new LinkedHashMap<>();
            report.put("device", d.name);
            report.put("deviceInfo", d.info == null ? Map.of() : ContractsJson.read(d.info, Map.class));
            report.put("results", outcome.results());
            emit(new StageEvents.Completed(StageEvents.SCHEMA_VERSION, t.jobId.toString(), t.id.toString(), t.tenant, Stage.BENCHMARK,
                    Instant.now(), List.of(), report));
        }
        return true;
    }

    /**
     * Tasks whose runner stopped heartbeating go back to the queue; one that has lost {@code hexforge.max-attempts}
     * runners that way (a bundle that crashes whoever runs it) fails its stage instead of being offered forever.
     */
    @Scheduled(fixedDelayString = "${hexforge.device-lease-check-ms:2000}")
    @Transactional
    public void requeueExpired() {
        for (BenchmarkTaskEntity t : tasks.findByStateAndLeaseUntilBefore(BenchmarkTaskEntity.State.LEASED, Instant.now())) {
            devices.findById(t.deviceId).filter(d -> t.id.equals(d.currentTask)).ifPresent(d -> d.currentTask = null);
            loseLease(t, "lease expired");
        }
    }

    /** The task's runner is gone: queued again, or, after {@code hexforge.max-attempts} such losses, its stage fails. */
    private void loseLease(BenchmarkTaskEntity t, String why) {
        t.deviceId = null;
        t.leaseUntil = null;
        t.leaseLosses++;
        if (t.leaseLosses < maxLeaseLosses) {
            LOG.info("benchmark task {} lost its runner ({}); queued again", t.id, why);
            t.state = BenchmarkTaskEntity.State.QUEUED;
            return;
        }
        LOG.warn("benchmark task {} lost its runner {} times; its stage fails", t.id, t.leaseLosses);
        t.state = BenchmarkTaskEntity.State.DONE;
        emit(new StageEvents.Failed(StageEvents.SCHEMA_VERSION, t.jobId.toString(), t.id.toString(), Stage.BENCHMARK, Instant.now(),
                ErrorCode.BENCHMARK_FAILED.error("the device runner stopped heartbeating (or started afresh) while running this benchmark, "
                        + t.leaseLosses + " times (a runner that crashes on the bundle does so); see the runners' logs"),
                Map.of()));
    }

    /** Cancels a queued or leased task (its job was cancelled or the attempt superseded). */
    public void cancel(UUID attemptId) {
        tasks.findById(attemptId).ifPresent(t -> t.state = BenchmarkTaskEntity.State.DONE);
    }

    /** The runner's news goes out as a stage event through the outbox, with the task's new state. */
    private void emit(StageEvents.Event e) {
        outbox.add(Topics.STAGE_EVENTS, e.jobId(), e);
    }

    public static String selectorOf(String device) {
        return device == null || device.isBlank() ? null : device.toLowerCase(Locale.ROOT);
    }
}
