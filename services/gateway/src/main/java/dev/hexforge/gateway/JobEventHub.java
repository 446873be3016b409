package dev.hexforge.gateway;

import org.springframework.stereotype.Component;
import org.springframework.web.servlet.mvc.method.annotation.SseEmitter;

import java.io.IOException;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * Server-sent event streams of jobs: every stage event the gateway applies goes to the job's open streams as it
 * happened (event name {@code progress}, {@code completed} or {@code failed}, data the event's JSON), followed by a
 * {@code job} event with the job's new state; a stream ends when its job does.
 */
@Component
class JobEventHub {
    static final Duration TIMEOUT = Duration.ofMinutes(30);
    private static final CopyOnWriteArrayList<SseEmitter> EMPTY = new CopyOnWriteArrayList<>();
    private final Map<UUID, CopyOnWriteArrayList<SseEmitter>> streams = new ConcurrentHashMap<>();
    /** Streams of all of a tenant's jobs (the dashboard's job list): a {@code job} event per change of any job. */
    private final Map<String, CopyOnWriteArrayList<SseEmitter>> tenantStreams = new ConcurrentHashMap<>();

    SseEmitter openTenant(String tenant) {
        SseEmitter e = new SseEmitter(TIMEOUT.toMillis());
        tenantStreams.computeIfAbsent(tenant, k -> new CopyOnWriteArrayList<>()).add(e);
        Runnable remove = () -> tenantStreams.computeIfPresent(tenant, (k, list) -> {
            list.remove(e);
            return list.isEmpty() ? null : list;
        });
        e.onCompletion(remove);
        e.onTimeout(remove);
        e.onError(t -> remove.run());
        return e;
    }

    /** Sends a {@code job} event ({@code {id, state}}) to the job's tenant's job-list streams. */
    void jobChanged(JobEntity job) {
        CopyOnWriteArrayList<SseEmitter> list = tenantStreams.get(job.tenant);
        if (list == null) {
            return;
        }
        for (SseEmitter e : list) {
            try {
                e.send(SseEmitter.event().name("job").data(Map.of("id", job.id.toString(), "state", job.state.name().toLowerCase())));
            } catch (IOException | IllegalStateException ex) {
                list.remove(e);
            }
        }
    }

    SseEmitter open(UUID job) {
        SseEmitter e = new SseEmitter(TIMEOUT.toMillis());
        streams.computeIfAbsent(job, k -> new CopyOnWriteArrayList<>()).add(e);
        Runnable remove = () -> remove(job, e);
        e.onCompletion(remove);
        e.onTimeout(remove);
        e.onError(t -> remove.run());
        return e;
    }

    /** Sends to every stream of the job; a stream that cannot take it is dropped. Ends them when {@code last}. */
    void publish(UUID job, String name, Object data, boolean last) {
        for (SseEmitter e : streams.getOrDefault(job, EMPTY)) {
            try {
                e.send(SseEmitter.event().name(name).data(data));
                if (last) {
                    e.complete();
                }
            } catch (IOException | IllegalStateException ex) {
                remove(job, e);
            }
        }
    }

    private void remove(UUID job, SseEmitter e) {
        streams.computeIfPresent(job, (k, list) -> {
            list.remove(e);
            return list.isEmpty() ? null : list;
        });
    }
}
