package dev.hexforge.gateway.job;

import org.springframework.stereotype.Component;
import org.springframework.web.servlet.mvc.method.annotation.SseEmitter;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
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
    private static final CopyOnWriteArrayList<JobStream> EMPTY = new CopyOnWriteArrayList<>();
    private final Map<UUID, CopyOnWriteArrayList<JobStream>> streams = new ConcurrentHashMap<>();
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

    /** A stream of the job's events; nothing reaches it before {@link JobStream#start} sends the job's snapshot. */
    JobStream open(UUID job) {
        JobStream s = new JobStream(new SseEmitter(TIMEOUT.toMillis()));
        streams.computeIfAbsent(job, k -> new CopyOnWriteArrayList<>()).add(s);
        Runnable remove = () -> remove(job, s);
        s.emitter().onCompletion(remove);
        s.emitter().onTimeout(remove);
        s.emitter().onError(t -> remove.run());
        return s;
    }

    /** Sends to every stream of the job; a stream that cannot take it is dropped. Ends them when {@code last}. */
    void publish(UUID job, String name, Object data, boolean last) {
        for (JobStream s : streams.getOrDefault(job, EMPTY)) {
            try {
                s.send(name, data, last);
            } catch (IOException | IllegalStateException ex) {
                remove(job, s);
            }
        }
    }

    /**
     * One client's stream of a job. It is registered before the job's snapshot is read (so no event falls between the
     * snapshot and the stream), and events published before the snapshot is sent wait for it: a client always reads
     * the snapshot first, then every event in the order published, even when the publisher outruns the request.
     */
    static final class JobStream {
        private final SseEmitter emitter;
        /** Events published before the snapshot; null once it is sent. */
        private List<SseEmitter.SseEventBuilder> waiting = new ArrayList<>();
        private boolean endAfterWaiting;

        JobStream(SseEmitter emitter) {
            this.emitter = emitter;
        }

        SseEmitter emitter() {
            return emitter;
        }

        /** Sends the snapshot, then what waited for it; ends the stream when the job has ended. */
        synchronized void start(Object snapshot, boolean ended) throws IOException {
            emitter.send(SseEmitter.event().name("job").data(snapshot));
            for (SseEmitter.SseEventBuilder e : waiting) {
                emitter.send(e);
            }
            waiting = null;
            if (ended || endAfterWaiting) {
                emitter.complete();
            }
        }

        synchronized void send(String name, Object data, boolean last) throws IOException {
            if (waiting != null) {
                waiting.add(SseEmitter.event().name(name).data(data));
                endAfterWaiting |= last;
                return;
            }
            emitter.send(SseEmitter.event().name(name).data(data));
            if (last) {
                emitter.complete();
            }
        }
    }

    private void remove(UUID job, JobStream e) {
        streams.computeIfPresent(job, (k, list) -> {
            list.remove(e);
            return list.isEmpty() ? null : list;
        });
    }
}
