package dev.hexforge.stage;

import dev.hexforge.contracts.JobSpec;
import dev.hexforge.contracts.StageEvents;
import dev.hexforge.store.ArtifactStore;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/** One attempt of a stage as its pass sees it: the request, a scratch folder, inputs, progress and outputs. */
public interface Attempt {

    StageEvents.StageRequest request();

    default JobSpec spec() {
        return request().spec();
    }

    /** An empty folder owned by this attempt, deleted when it ends. */
    Path dir();

    /**
     * The model this stage works on: the previous stage's output folder (downloaded to {@code dir()/in/model}) when
     * there is one, else the job's uploaded archive (unpacked once into the service's cache), else its {@code model.path}.
     */
    Path model();

    /**
     * The job's base model, whatever the stages before made of it: its uploaded archive (among this attempt's inputs,
     * unpacked once into the service's cache) or its {@code model.path}.
     */
    Path baseModel();

    /**
     * A file the job names as input ({@code finetune.data}, {@code quantize.calibration}, ...): its upload, fetched into
     * this attempt's folder and checked against its digest, or its server path, checked against the input roots.
     */
    Path input(String field, JobSpec.Input value);

    /**
     * Reports progress; calls closer together than the service's interval are dropped unless {@code force}. A
     * negative percent leaves the last one standing (metrics-only updates).
     */
    void progress(double percent, String message, Map<String, Double> metrics, boolean force);

    ArtifactStore store();

    /**
     * Runs a call to the object store (or to the service's own database, where it has one) and tries it again while
     * that is away, for the worker's store-retry window (60 s by default), the progress saying why the attempt waits;
     * any other failure, or one that lasts longer, is thrown. The call must be safe to repeat.
     */
    <T> T whileAway(Supplier<T> call);

    /** Stores a folder content-addressed and describes it as this stage's output of the given kind. */
    StageEvents.ArtifactRef storeOutput(Path folder, String kind);

    /** The completed event of this attempt; {@code report} is a pass's report record (or a map), sent as its JSON object. */
    StageEvents.Completed completed(List<StageEvents.ArtifactRef> outputs, Object report);
}
