package dev.hexforge.gateway.device;

import dev.hexforge.contracts.DeviceMessages;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.stereotype.Component;
import org.springframework.web.context.request.async.DeferredResult;

import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * Device runners' long polls for benchmark tasks, held without a request thread each: one waiting poll per device
 * (a second one is refused, so one token cannot pile up requests), all of them tried by one timer every 250 ms.
 */
@Component
class TaskPolls implements DisposableBean {
    private static final Logger LOG = LoggerFactory.getLogger(TaskPolls.class);
    private final DeviceService devices;
    /** A device's waiting poll and when it gives up (System.nanoTime). */
    private record Poll(DeferredResult<ResponseEntity<?>> result, long deadline) {
    }

    private final Map<UUID, Poll> waiting = new ConcurrentHashMap<>();
    private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "hexforge-task-polls");
        t.setDaemon(true);
        return t;
    });

    TaskPolls(DeviceService devices) {
        this.devices = devices;
        timer.scheduleWithFixedDelay(this::tryAll, 250, 250, TimeUnit.MILLISECONDS);
    }

    DeferredResult<ResponseEntity<?>> open(UUID device, Duration wait) {
        DeferredResult<ResponseEntity<?>> r = new DeferredResult<>(wait.toMillis() + 1000L);
        Poll poll = new Poll(r, System.nanoTime() + wait.toNanos());
        if (waiting.putIfAbsent(device, poll) != null) {
            r.setResult(ResponseEntity.status(HttpStatus.CONFLICT).body(Map.of("error",
                    "a poll of this device is already waiting; a device polls once at a time")));
            return r;
        }
        r.onCompletion(() -> waiting.remove(device, poll));
        r.onTimeout(() -> r.setResult(ResponseEntity.noContent().build()));
        tryOne(device, poll);
        return r;
    }

    /** Ends a removed device's poll. */
    void cancel(UUID device) {
        Poll p = waiting.remove(device);
        if (p != null) {
            p.result().setResult(ResponseEntity.status(HttpStatus.UNAUTHORIZED).body(Map.of("error", "this device was removed")));
        }
    }

    private void tryAll() {
        waiting.forEach(this::tryOne);
    }

    private void tryOne(UUID device, Poll poll) {
        DeferredResult<ResponseEntity<?>> r = poll.result();
        try {
            if (r.isSetOrExpired()) {
                return;
            }
            Optional<DeviceMessages.BenchmarkTask> t = devices.lease(device);
            if (t.isPresent()) {
                if (!r.setResult(ResponseEntity.ok(t.get()))) {
                    LOG.warn("device {} left before taking task {}; its lease will expire", device, t.get().taskId());
                }
            } else if (System.nanoTime() >= poll.deadline()) {
                r.setResult(ResponseEntity.noContent().build());
            }
        } catch (RuntimeException e) {
            r.setErrorResult(e);
        } finally {
            if (r.isSetOrExpired()) {
                waiting.remove(device, poll);
            }
        }
    }

    @Override
    public void destroy() {
        timer.shutdownNow();
    }
}
