package dev.hexforge.stage;

import dev.hexforge.checkpoint.CheckpointException;
import dev.hexforge.contracts.ContractsJson;
import dev.hexforge.contracts.Stage;
import dev.hexforge.contracts.StageEvents;
import dev.hexforge.contracts.Topics;
import dev.hexforge.io.Folders;
import dev.hexforge.io.ModelArchive;
import dev.hexforge.safetensors.SafetensorsException;
import dev.hexforge.store.ArtifactStore;
import dev.hexforge.tokenizer.TokenizerException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.kafka.core.KafkaTemplate;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * What every stage service does around its pass: read the request, re-emit the stored result of an attempt that
 * already finished (a redelivery), report progress, give the pass a scratch folder and its input model, store the
 * result before announcing it, and turn failures into a failed event with a code and a hint. A subclass names its
 * stage, runs its pass in {@link #run} and may map its own exceptions in {@link #triage}; its {@code @KafkaListener}
 * calls {@link #handle}.
 */
public abstract class StageWorker {
    private static final Logger LOG = LoggerFactory.getLogger(StageWorker.class);
    private final Stage stage;
    private final KafkaTemplate<String, String> kafka;
    private final ArtifactStore store;
    private final Path work;
    private final Duration progressInterval;

    protected StageWorker(Stage stage, KafkaTemplate<String, String> kafka, ArtifactStore store, Path work,
                          Duration progressInterval) {
        this.stage = stage;
        this.kafka = kafka;
        this.store = store;
        this.work = work;
        this.progressInterval = progressInterval;
    }

    /** The pass: returns the completed event (build it with {@link Attempt#completed}) or throws. */
    protected abstract StageEvents.Completed run(Attempt attempt) throws Exception;

    /**
     * Code, message and hint for an exception of the pass. This handles what every stage meets (a broken model
     * folder, corrupt weights, a bad request); services add their own exceptions and fall back to this.
     */
    protected StageEvents.StageError triage(Exception e) {
        String msg = message(e);
        if (e instanceof CheckpointException || e instanceof TokenizerException || e instanceof ModelArchive.ArchiveException) {
            return new StageEvents.StageError("MODEL_INVALID", msg, "check config.json, the weights and tokenizer.json of the model folder");
        }
        if (e instanceof SafetensorsException) {
            return new StageEvents.StageError("WEIGHTS_CORRUPT", msg, "re-upload or re-download the model's safetensors files");
        }
        if (e instanceof IllegalArgumentException) {
            return new StageEvents.StageError("BAD_REQUEST", msg, "fix the job spec and resume the job");
        }
        return new StageEvents.StageError("INTERNAL", msg, "resume the job; report it if it persists");
    }

    protected static String message(Exception e) {
        return e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
    }

    /** The first progress message of an attempt. */
    protected String startMessage(StageEvents.StageRequest request) {
        return stage.id() + " started";
    }

    public static String resultKey(String attemptId) {
        return "attempts/" + attemptId + "/completed.json";
    }

    protected Path work() {
        return work;
    }

    protected ArtifactStore store() {
        return store;
    }

    public void handle(String payload) {
        StageEvents.StageRequest req;
        try {
            req = ContractsJson.read(payload, StageEvents.StageRequest.class);
        } catch (IllegalArgumentException e) {
            LOG.warn("unreadable {} request dropped: {}", stage.id(), e.getMessage());
            return;
        }
        Path dir = work.resolve(req.attemptId());
        try {
            if (store.exists(resultKey(req.attemptId()))) {
                LOG.info("attempt {} already completed; re-emitting its result", req.attemptId());
                send(req.jobId(), new String(store.getBytes(resultKey(req.attemptId())), StandardCharsets.UTF_8));
                return;
            }
            Folders.deleteTree(dir);
            Files.createDirectories(dir);
            AttemptImpl attempt = new AttemptImpl(req, dir);
            attempt.progress(0, startMessage(req), Map.of(), true);
            StageEvents.Completed done = run(attempt);
            store.putJson(resultKey(req.attemptId()), ContractsJson.MAPPER.valueToTree(done));
            send(req.jobId(), ContractsJson.write(done));
        } catch (StageFailure f) {
            LOG.info("{} attempt {} failed: {}", stage.id(), req.attemptId(), f.getMessage());
            send(req.jobId(), ContractsJson.write(new StageEvents.Failed(StageEvents.SCHEMA_VERSION, req.jobId(),
                    req.attemptId(), stage, Instant.now(), f.error(), f.report())));
        } catch (Exception e) {
            LOG.info("{} attempt {} failed: {}", stage.id(), req.attemptId(), e.getMessage());
            send(req.jobId(), ContractsJson.write(new StageEvents.Failed(StageEvents.SCHEMA_VERSION, req.jobId(),
                    req.attemptId(), stage, Instant.now(), triage(e), Map.of())));
        } finally {
            Folders.deleteQuietly(dir);
        }
    }

    /**
     * An uploaded model archive, unpacked once per content into {@code work/cache/<sha256>} and reused by later
     * attempts; the archive's digest is checked as it streams in.
     */
    private synchronized Path unpacked(StageEvents.ArtifactRef archive) {
        Path cached = work.resolve("cache").resolve(archive.sha256());
        if (Files.isDirectory(cached)) {
            return cached;
        }
        try {
            Files.createDirectories(cached.getParent());
            java.security.MessageDigest md = java.security.MessageDigest.getInstance("SHA-256");
            try (java.io.InputStream in = new java.security.DigestInputStream(store.getStream(archive.key()), md)) {
                ModelArchive.extract(in, cached, ModelArchive.Limits.DEFAULT);
                in.transferTo(java.io.OutputStream.nullOutputStream()); // the archive's tail, for the digest
            }
            String got = java.util.HexFormat.of().formatHex(md.digest());
            if (!got.equals(archive.sha256())) {
                Folders.deleteTree(cached);
                throw new ArtifactStore.StoreException("uploaded archive " + archive.id() + " is corrupt in storage: sha256 " + got
                        + ", uploaded as " + archive.sha256());
            }
            return cached;
        } catch (java.io.IOException | java.security.NoSuchAlgorithmException e) {
            throw new ArtifactStore.StoreException("unpacking uploaded archive " + archive.id() + ": " + e.getMessage(), e);
        }
    }

    private void send(String key, String payload) {
        try {
            kafka.send(Topics.STAGE_EVENTS, key, payload).get(30, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new IllegalStateException("cannot report to " + Topics.STAGE_EVENTS + ": " + e.getMessage(), e);
        }
    }

    private final class AttemptImpl implements Attempt {
        private final StageEvents.StageRequest req;
        private final Path dir;
        private long lastProgress;
        private Path model;

        AttemptImpl(StageEvents.StageRequest req, Path dir) {
            this.req = req;
            this.dir = dir;
        }

        @Override
        public StageEvents.StageRequest request() {
            return req;
        }

        @Override
        public Path dir() {
            return dir;
        }

        @Override
        public Path model() {
            if (model != null) {
                return model;
            }
            if (!req.inputs().isEmpty() && req.inputs().get(0).kind().equals(StageEvents.MODEL_ARCHIVE)) {
                model = unpacked(req.inputs().get(0));
            } else if (!req.inputs().isEmpty()) {
                Path in = dir.resolve("in").resolve("model"); // a stable name: exports record it
                store.getFolder(req.inputs().get(0).sha256(), in);
                model = in;
            } else {
                model = Path.of(req.spec().model().path());
            }
            return model;
        }

        @Override
        public void progress(double percent, String message, Map<String, Double> metrics, boolean force) {
            long now = System.nanoTime();
            if (!force && now - lastProgress < progressInterval.toNanos()) {
                return;
            }
            lastProgress = now;
            send(req.jobId(), ContractsJson.write(new StageEvents.Progress(StageEvents.SCHEMA_VERSION, req.jobId(),
                    req.attemptId(), stage, Instant.now(), percent, message, metrics)));
        }

        @Override
        public ArtifactStore store() {
            return store;
        }

        @Override
        public StageEvents.ArtifactRef storeOutput(Path folder, String kind) {
            ArtifactStore.StoredFolder stored = store.putFolder(folder);
            return new StageEvents.ArtifactRef(StageEvents.artifactId(req.attemptId(), stored.sha256()), kind, stored.sha256(),
                    stored.size(), stored.key());
        }

        @Override
        public StageEvents.Completed completed(List<StageEvents.ArtifactRef> outputs, Map<String, Object> report) {
            return new StageEvents.Completed(StageEvents.SCHEMA_VERSION, req.jobId(), req.attemptId(), req.tenant(), stage, Instant.now(),
                    outputs, report);
        }
    }
}
