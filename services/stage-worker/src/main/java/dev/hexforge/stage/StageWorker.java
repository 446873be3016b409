package dev.hexforge.stage;

import dev.hexforge.contracts.ContractsJson;
import dev.hexforge.contracts.ErrorCode;
import dev.hexforge.contracts.HexforgeException;
import dev.hexforge.contracts.InputPolicy;
import dev.hexforge.contracts.Stage;
import dev.hexforge.contracts.StageEvents;
import dev.hexforge.contracts.Topics;
import dev.hexforge.io.Folders;
import dev.hexforge.store.ArtifactStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.context.event.ContextRefreshedEvent;
import org.springframework.context.event.EventListener;
import org.springframework.kafka.config.KafkaListenerEndpointRegistry;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.listener.MessageListenerContainer;
import org.springframework.kafka.support.Acknowledgment;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import java.util.stream.Stream;

/**
 * What every stage service does around its pass: read the request, re-emit the stored result of an attempt that
 * already finished (a redelivery), report progress, give the pass a scratch folder and its input model, store the
 * result before announcing it, and turn failures into a failed event with a code and a hint. A subclass names its
 * stage and runs its pass in {@link #run}; its request listener is registered from the stage
 * ({@link StageServiceConfig#stageListeners}) and calls {@link #submit}.
 * <p>
 * Attempts run on a bounded pool ({@code hexforge.worker.threads}, default 1). While the pool is full the listener's
 * partitions are paused, so the consumer keeps polling (a run of hours never trips {@code max.poll.interval.ms}) and
 * takes no new request; a request's offset is committed when its attempt ends, so one whose service died mid-run is
 * delivered again when the service (or another replica) comes back. While an attempt runs, its last progress is
 * repeated every {@code hexforge.worker.heartbeat} (10 s) when the pass says nothing, so the gateway can tell a
 * silent pass from a dead service. A cancelled attempt stops at its next progress report.
 */
public abstract class StageWorker implements DisposableBean {
    private static final Logger LOG = LoggerFactory.getLogger(StageWorker.class);
    private final Stage stage;
    private final KafkaTemplate<String, String> kafka;
    private final ArtifactStore store;
    private final Path work;
    private final Duration progressInterval;
    private final ArchiveCache archives;
    private final StageEventSender events;
    private final ConcurrentHashMap<String, AttemptRun> running = new ConcurrentHashMap<>();
    private final AtomicInteger inFlight = new AtomicInteger();
    private int threads = StageServiceProperties.Worker.DEFAULTS.threads();
    private Duration heartbeat = StageServiceProperties.Worker.DEFAULTS.heartbeat();
    private ExecutorService pool;
    private ScheduledExecutorService beats;
    private KafkaListenerEndpointRegistry registry;
    private InputPolicy inputs = InputPolicy.denyAll();
    private final String instance = UUID.randomUUID().toString();
    private Duration reportEvery = StageServiceProperties.Worker.DEFAULTS.reportInterval();
    /** How long storing an output is tried again while the object store does not answer. */
    Duration storeRetry = StageServiceProperties.Worker.DEFAULTS.storeRetry();
    private ScheduledExecutorService reports;

    protected StageWorker(Stage stage, KafkaTemplate<String, String> kafka, ArtifactStore store, Path work,
                          Duration progressInterval) {
        this.stage = stage;
        this.kafka = kafka;
        this.store = store;
        this.work = work;
        this.progressInterval = progressInterval;
        this.archives = new ArchiveCache(store, work.resolve("cache"), StageServiceProperties.Worker.DEFAULTS.cacheSize().toBytes());
        this.events = new StageEventSender(kafka, stage);
    }

    /** Pool size and heartbeat from configuration; the registry to pause and resume this stage's listener with. */
    @Autowired
    void configure(StageServiceProperties settings, KafkaListenerEndpointRegistry registry, InputPolicy inputs) {
        this.threads = Math.max(1, settings.worker().threads());
        this.reportEvery = settings.worker().reportInterval();
        this.heartbeat = settings.worker().heartbeat();
        this.archives.maxBytes(settings.worker().cacheSize().toBytes());
        this.storeRetry = settings.worker().storeRetry();
        this.registry = registry;
        this.inputs = inputs;
    }

    private synchronized ExecutorService pool() {
        if (pool == null) {
            AtomicInteger n = new AtomicInteger();
            pool = Executors.newFixedThreadPool(threads, r -> {
                Thread t = new Thread(r, "hexforge-" + stage.id() + "-" + n.incrementAndGet());
                t.setDaemon(true);
                return t;
            });
            beats = Executors.newSingleThreadScheduledExecutor(r -> {
                Thread t = new Thread(r, "hexforge-" + stage.id() + "-heartbeat");
                t.setDaemon(true);
                return t;
            });
            long every = Math.max(100, heartbeat.toMillis() / 2);
            beats.scheduleWithFixedDelay(() -> running.values().forEach(AttemptRun::beat), every, every, TimeUnit.MILLISECONDS);
        }
        return pool;
    }

    @Override
    public void destroy() {
        if (pool != null) {
            pool.shutdownNow();
            beats.shutdownNow();
        }
        synchronized (this) {
            if (reports != null) {
                reports.shutdownNow();
            }
        }
    }

    /**
     * Tells the gateway what this service can hold (its heap) once the service is up and every
     * {@code hexforge.worker.report-interval}, so a job no instance of the stage can hold is refused at submission.
     */
    @EventListener(ContextRefreshedEvent.class)
    public synchronized void startReports() {
        if (reports != null) {
            return;
        }
        reports = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "hexforge-" + stage.id() + "-reports");
            t.setDaemon(true);
            return t;
        });
        reports.scheduleWithFixedDelay(this::report, 0, Math.max(100, reportEvery.toMillis()), TimeUnit.MILLISECONDS);
    }

    /** Best effort: a report lost is followed by the next. */
    void report() {
        try {
            kafka.send(Topics.SERVICES, stage.id(), ContractsJson.write(new StageEvents.ServiceReport(StageEvents.SCHEMA_VERSION,
                    stage, instance, Runtime.getRuntime().maxMemory(), Instant.now())));
        } catch (RuntimeException e) {
            LOG.debug("report to {} not sent: {}", Topics.SERVICES, e.getMessage());
        }
    }

    public Stage stage() {
        return stage;
    }

    /** The id of this stage's request listener ({@link StageServiceConfig} registers it). */
    public String listenerId() {
        return stage.id() + "-requests";
    }

    /**
     * Takes a request from the listener: runs it on the pool, pausing the listener while the pool is full, and
     * commits its offset when the attempt ends.
     */
    public void submit(String payload, Acknowledgment ack) {
        if (inFlight.incrementAndGet() >= threads) {
            container().pause();
        }
        pool().execute(() -> {
            boolean settled = false;
            try {
                settled = handle(payload);
            } finally {
                Thread.interrupted(); // a cancellation's interrupt must not reach the next attempt on this thread
                if (settled) { // else the request is delivered again after a restart: its result is re-emitted or re-made
                    ack.acknowledge();
                }
                if (inFlight.decrementAndGet() < threads) {
                    container().resume();
                }
            }
        });
    }

    private MessageListenerContainer container() {
        MessageListenerContainer c = registry.getListenerContainer(listenerId());
        if (c == null) {
            throw new IllegalStateException("no listener container '" + listenerId() + "' for the " + stage.id() + " worker");
        }
        return c;
    }

    /** Stops an attempt this instance is running (no-op otherwise): it ends at its next progress report. */
    public void cancel(String attemptId) {
        AttemptRun a = running.get(attemptId);
        if (a != null) {
            LOG.info("{} attempt {} cancelled", stage.id(), attemptId);
            a.cancel();
        }
    }

    /** The pass: returns the completed event (build it with {@link Attempt#completed}) or throws. */
    protected abstract StageEvents.Completed run(Attempt attempt) throws Exception;

    /**
     * Code, message and hint for an exception of the pass: a library's {@link dev.hexforge.contracts.HexforgeException}
     * carries its own; a bad request is BAD_REQUEST; anything else is INTERNAL. A service overrides this only where
     * its stage gives a library's failure another meaning.
     */
    protected StageEvents.StageError triage(Exception e) {
        if (e instanceof HexforgeException h) {
            return h.error();
        }
        if (e instanceof IllegalArgumentException) {
            return ErrorCode.BAD_REQUEST.error(message(e));
        }
        if (ArtifactStore.unreachable(e)) {
            return ErrorCode.STORAGE_UNAVAILABLE.error(message(e));
        }
        return ErrorCode.INTERNAL.error(message(e));
    }

    /**
     * Whether a failure is a dependency away for now, to wait for rather than fail the attempt over: the object store
     * not answering. A service with a database of its own adds that.
     */
    protected boolean away(Throwable e) {
        return ArtifactStore.unreachable(e);
    }

    protected static String message(Exception e) {
        return e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
    }

    /** The first progress message of an attempt. */
    protected String startMessage(StageEvents.StageRequest request) {
        return stage.id() + " started";
    }

    public static String resultKey(String attemptId) {
        return ArtifactStore.resultKey(attemptId);
    }

    protected Path work() {
        return work;
    }

    protected ArtifactStore store() {
        return store;
    }

    /** What an attempt of this worker uses: its stage, events, store, inputs, intervals and retry while away. */
    private AttemptServices attemptServices() {
        return new AttemptServices(stage, events, store(), archives, inputs, heartbeat, progressInterval,
                new AttemptServices.WhileAway() {
                    @Override
                    public <T> T retry(Supplier<T> call, Runnable waiting) {
                        return retryWhileAway(call, waiting);
                    }
                });
    }

    /**
     * Runs one request to its end and reports it. True when it is settled: its completed or failed event is with the
     * broker (or there was nothing to report), so its offset may be committed; false when this worker was stopped
     * before the broker took the event.
     */
    public boolean handle(String payload) {
        try {
            attempt(payload);
            return true;
        } catch (UndeliveredException e) {
            LOG.warn("{}; the request will be delivered again", e.getMessage());
            return false;
        }
    }

    private void attempt(String payload) {
        StageEvents.StageRequest req;
        try {
            req = ContractsJson.read(payload, StageEvents.StageRequest.class);
        } catch (IllegalArgumentException e) {
            LOG.warn("unreadable {} request dropped: {}", stage.id(), e.getMessage());
            return;
        }
        Path dir = work.resolve(req.attemptId());
        try {
            Set<String> marks = retryWhileAway(() -> store.keysUnder(ArtifactStore.attemptPrefix(req.attemptId())), () -> { }); // one round trip
            if (marks.contains(resultKey(req.attemptId()))) {
                LOG.info("attempt {} already completed; re-emitting its result", req.attemptId());
                events.deliver(req.jobId(), new String(store.getBytes(resultKey(req.attemptId())), StandardCharsets.UTF_8));
                return;
            }
            if (marks.contains(ArtifactStore.cancelledKey(req.attemptId()))) {
                LOG.info("attempt {} was cancelled before it started; dropped", req.attemptId());
                return;
            }
            clearForAttempt(dir);
            AttemptRun attempt = new AttemptRun(attemptServices(), req, dir);
            running.put(req.attemptId(), attempt);
            attempt.progress(0, startMessage(req), Map.of(), true);
            StageEvents.Completed done = run(attempt);
            attempt.checkCancelled();
            events.deliver(req.jobId(), ContractsJson.write(done));
            // kept for a redelivery (the offset is committed after this): a crash before it, or the store away, only
            // means a re-run if the request comes again
            try {
                store.putJson(resultKey(req.attemptId()), ContractsJson.MAPPER.valueToTree(done));
            } catch (ArtifactStore.StoreException e) {
                LOG.warn("{} attempt {} completed; its result was not kept for a redelivery: {}", stage.id(), req.attemptId(), e.getMessage());
            }
        } catch (UndeliveredException u) {
            throw u;
        } catch (AttemptCancelledException c) {
            LOG.info("{} attempt {} stopped: the job was cancelled", stage.id(), req.attemptId());
        } catch (StageFailure f) {
            LOG.info("{} attempt {} failed: {}", stage.id(), req.attemptId(), f.getMessage());
            fail(req, f.error(), f.report());
        } catch (Exception e) {
            AttemptRun a = running.get(req.attemptId());
            if (a != null && a.cancelled()) { // interrupted mid-I/O by the cancellation
                LOG.info("{} attempt {} stopped: the job was cancelled ({})", stage.id(), req.attemptId(), e.getMessage());
                return;
            }
            StageEvents.StageError error = triage(e);
            if (error.code().equals(ErrorCode.INTERNAL.name())) {
                LOG.warn("{} attempt {} failed unexpectedly", stage.id(), req.attemptId(), e);
            } else {
                LOG.info("{} attempt {} failed: {}", stage.id(), req.attemptId(), e.getMessage());
            }
            fail(req, error, Map.of());
        } catch (OutOfMemoryError e) {
            // what the attempt allocated is unreachable once this frame unwinds; the worker lives on for the next request
            LOG.warn("{} attempt {} ran out of memory", stage.id(), req.attemptId());
            fail(req, ErrorCode.OUT_OF_MEMORY.error("the " + stage.id() + " stage needed more memory than this service has ("
                    + (Runtime.getRuntime().maxMemory() >> 20) + " MB heap)"), Map.of());
        } catch (Error e) {
            LOG.error("{} attempt {} failed with an error", stage.id(), req.attemptId(), e);
            fail(req, ErrorCode.INTERNAL.error(e.toString()), Map.of());
        } finally {
            running.remove(req.attemptId());
            Folders.deleteQuietly(dir);
        }
    }

    /**
     * The folder under an attempt's own ({@link Attempt#dir}) whose pass continues from what is there when the same
     * attempt is delivered again, after its service was killed mid-run; null (the default) when the pass starts over.
     */
    protected String resumableOutput() {
        return null;
    }

    /**
     * An attempt's folder as its run starts: empty, but for the resumable output that a killed run of the same
     * attempt left (its inputs are fetched again: they may have been half-written).
     */
    private void clearForAttempt(Path dir) throws IOException {
        String kept = resumableOutput();
        if (kept != null && Files.isDirectory(dir.resolve(kept))) {
            LOG.info("{} attempt {} delivered again: its pass continues from its {} folder", stage.id(), dir.getFileName(), kept);
            try (Stream<Path> children = Files.list(dir)) {
                for (Path p : children.toList()) {
                    if (!p.getFileName().toString().equals(kept)) {
                        Folders.deleteTree(p);
                    }
                }
            }
            return;
        }
        Folders.deleteTree(dir);
        Files.createDirectories(dir);
    }

    /** The one way an attempt fails: its failed event, delivered as completions are. */
    private void fail(StageEvents.StageRequest req, StageEvents.StageError error, Map<String, Object> report) {
        events.deliver(req.jobId(), ContractsJson.write(new StageEvents.Failed(StageEvents.SCHEMA_VERSION, req.jobId(),
                req.attemptId(), stage, Instant.now(), error, report)));
    }

    /**
     * Runs a call, trying again for {@link #storeRetry} (0.5 s to 5 s apart) while what it needs is {@link #away away}
     * (the object store; a service's own database where it adds that), telling {@code waiting} each time; objects are
     * content-addressed, so a second try rewrites nothing that arrived. Any other failure, or one that lasts longer,
     * is thrown.
     */
    <T> T retryWhileAway(Supplier<T> transfer, Runnable waiting) {
        long deadline = System.nanoTime() + storeRetry.toNanos();
        for (long pause = 500; ; pause = Math.min(5_000, pause * 2)) {
            try {
                return transfer.get();
            } catch (RuntimeException e) {
                if (!away(e) || System.nanoTime() + pause * 1_000_000 > deadline) {
                    throw e;
                }
                waiting.run();
                try {
                    Thread.sleep(pause);
                } catch (InterruptedException x) {
                    Thread.currentThread().interrupt();
                    throw e;
                }
            }
        }
    }

    /** A terminal event the broker did not take before this worker stopped. */
    static final class UndeliveredException extends RuntimeException {
        UndeliveredException(String message) {
            super(message);
        }
    }

    /** Thrown into a pass at its next progress report once its attempt is cancelled. */
    static final class AttemptCancelledException extends RuntimeException {
        AttemptCancelledException(String attemptId) {
            super("attempt " + attemptId + " was cancelled");
        }
    }
}
