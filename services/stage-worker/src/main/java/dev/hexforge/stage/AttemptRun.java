package dev.hexforge.stage;

import com.fasterxml.jackson.core.type.TypeReference;
import dev.hexforge.contracts.ContractsJson;
import dev.hexforge.contracts.JobSpec;
import dev.hexforge.contracts.StageEvents;
import dev.hexforge.io.Folders;
import dev.hexforge.store.ArtifactStore;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.DigestInputStream;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Instant;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * One attempt of a stage as its pass sees it ({@link Attempt}): its request and folder, its inputs fetched from the
 * object store (tried again while the store is away) or resolved under the input roots, its progress sent at most every
 * progress interval and repeated as a heartbeat, and its cancellation, which the next progress report throws.
 */
final class AttemptRun implements Attempt {
    private final AttemptServices services;
    private final StageEvents.StageRequest req;
    private final Path dir;
    private final Thread thread = Thread.currentThread();
    private volatile long lastProgress;
    private volatile long lastSent;
    private volatile String lastMessage = "";
    private volatile boolean cancelled;
    private Path model;

    AttemptRun(AttemptServices services, StageEvents.StageRequest req, Path dir) {
        this.services = services;
        this.req = req;
        this.dir = dir;
    }

    /** Stops the attempt: it ends at its next progress report, or now if it waits on I/O. */
    void cancel() {
        cancelled = true;
        thread.interrupt();
    }

    boolean cancelled() {
        return cancelled;
    }

    void checkCancelled() {
        if (cancelled) {
            throw new StageWorker.AttemptCancelledException(req.attemptId());
        }
    }

    /** Repeats the last progress when nothing was sent for a heartbeat interval (from the heartbeat thread). */
    void beat() {
        if (!cancelled && System.nanoTime() - lastSent >= services.heartbeat().toNanos()) {
            emit(-1, lastMessage, Map.of());
        }
    }

    private void emit(double percent, String message, Map<String, Double> metrics) {
        lastSent = System.nanoTime();
        services.events().tell(req.jobId(), ContractsJson.write(new StageEvents.Progress(StageEvents.SCHEMA_VERSION, req.jobId(),
                req.attemptId(), services.stage(), Instant.now(), percent, message, metrics)));
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
        Optional<StageEvents.ArtifactRef> previous = req.inputs().stream().filter(i -> !StageEvents.isJobInput(i.kind())).findFirst();
        if (previous.isPresent()) {
            Path in = dir.resolve("in").resolve("model"); // a stable name: exports record it
            fetchFolder(previous.get().sha256(), in);
            model = in;
        } else {
            model = baseModel();
        }
        return model;
    }

    @Override
    public Path baseModel() {
        Optional<StageEvents.ArtifactRef> ref = req.inputs().stream()
                .filter(i -> i.kind().equals(StageEvents.MODEL_ARCHIVE) || i.kind().equals(StageEvents.BASE_MODEL)).findFirst();
        if (ref.isPresent() && ref.get().kind().equals(StageEvents.MODEL_ARCHIVE)) {
            return retrying(() -> services.archives().unpacked(ref.get()));
        }
        if (ref.isPresent()) { // an artifact of the tenant's, checked by the gateway
            Path in = dir.resolve("in").resolve("base-model");
            if (!Files.isDirectory(in)) {
                fetchFolder(ref.get().sha256(), in);
            }
            return in;
        }
        if (req.spec().model().path() == null) {
            throw new IllegalArgumentException("model: the request names no input for it (" + req.spec().model().describe() + ")");
        }
        return services.inputs().resolve("model.path", req.spec().model().path(), true);
    }

    @Override
    public Path input(String field, JobSpec.Input value) {
        if (value.path() != null) {
            return services.inputs().resolve(field + ".path", value.path(), false);
        }
        StageEvents.ArtifactRef ref = req.inputs().stream().filter(i -> StageEvents.isInputFor(i.kind(), field)).findFirst()
                .orElseThrow(() -> new IllegalArgumentException(field + ": the request carries no upload for it"));
        Path file = dir.resolve("inputs").resolve(StageEvents.inputFileName(ref.kind()));
        return retrying(() -> fetchUpload(ref, file));
    }

    private Path fetchUpload(StageEvents.ArtifactRef ref, Path file) {
        try {
            Files.createDirectories(file.getParent());
            MessageDigest md = MessageDigest.getInstance("SHA-256");
            try (InputStream in = new DigestInputStream(services.store().getStream(ref.key()), md)) {
                Files.copy(in, file, StandardCopyOption.REPLACE_EXISTING);
            }
            String got = HexFormat.of().formatHex(md.digest());
            if (!got.equals(ref.sha256())) {
                throw new ArtifactStore.StoreException("upload " + ref.id() + " is corrupt in storage: sha256 " + got
                        + ", uploaded as " + ref.sha256());
            }
            return file;
        } catch (IOException | NoSuchAlgorithmException e) {
            throw new ArtifactStore.StoreException("reading upload " + ref.id() + ": " + e.getMessage(), e);
        }
    }

    @Override
    public void progress(double percent, String message, Map<String, Double> metrics, boolean force) {
        checkCancelled();
        lastMessage = message;
        long now = System.nanoTime();
        if (!force && now - lastProgress < services.progressInterval().toNanos()) {
            return;
        }
        lastProgress = now;
        emit(percent, message, metrics);
    }

    @Override
    public ArtifactStore store() {
        return services.store();
    }

    @Override
    public StageEvents.ArtifactRef storeOutput(Path folder, String kind) {
        ArtifactStore.StoredFolder stored = retrying(() -> services.store().putFolder(folder));
        return new StageEvents.ArtifactRef(StageEvents.artifactId(req.attemptId(), stored.sha256()), kind, stored.sha256(),
                stored.size(), stored.key());
    }

    /** A stored folder into {@code into}, afresh on each try (a try cut short leaves files behind). */
    private void fetchFolder(String manifestSha, Path into) {
        retrying(() -> {
            Folders.deleteQuietly(into);
            return services.store().getFolder(manifestSha, into);
        });
    }

    /** A transfer with the object store, tried again while it does not answer; the progress says why the attempt waits. */
    private <T> T retrying(Supplier<T> transfer) {
        return services.retry().retry(transfer, () -> progress(-1, "the object store does not answer; trying again", Map.of(), true));
    }

    @Override
    public <T> T whileAway(Supplier<T> call) {
        return services.retry().retry(call, () -> progress(-1, "a service this stage needs does not answer; trying again", Map.of(), true));
    }

    @Override
    public StageEvents.Completed completed(List<StageEvents.ArtifactRef> outputs, Object report) {
        return new StageEvents.Completed(StageEvents.SCHEMA_VERSION, req.jobId(), req.attemptId(), req.tenant(), services.stage(), Instant.now(),
                outputs, ContractsJson.MAPPER.convertValue(report, REPORT));
    }

    private static final TypeReference<Map<String, Object>> REPORT = new TypeReference<>() { };
}
