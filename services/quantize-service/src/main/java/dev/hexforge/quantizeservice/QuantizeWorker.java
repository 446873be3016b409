package dev.hexforge.quantizeservice;

import com.fasterxml.jackson.core.type.TypeReference;
import dev.hexforge.checkpoint.Checkpoint;
import dev.hexforge.contracts.ContractsJson;
import dev.hexforge.contracts.JobSpec;
import dev.hexforge.contracts.Stage;
import dev.hexforge.contracts.StageEvents;
import dev.hexforge.contracts.Topics;
import dev.hexforge.io.Folders;
import dev.hexforge.onnx.export.ExportOptions;
import dev.hexforge.quant.BundledData;
import dev.hexforge.quant.QuantSpec;
import dev.hexforge.quant.QuantizationException;
import dev.hexforge.quant.QuantizationReport;
import dev.hexforge.quant.QuantizeOptions;
import dev.hexforge.quant.QuantizePipeline;
import dev.hexforge.quant.gptq.Gptq;
import dev.hexforge.store.ArtifactStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.stereotype.Component;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Runs one quantize attempt per request: quantizes the job's model (or the previous stage's output), measures the
 * perplexity change on the evaluation text, and either stores a quantized checkpoint for the export stage or fails
 * the stage at the accuracy gate with the report attached. Redelivered requests of finished attempts re-emit.
 */
@Component
class QuantizeWorker {
    private static final Logger LOG = LoggerFactory.getLogger(QuantizeWorker.class);
    private final KafkaTemplate<String, String> kafka;
    private final ArtifactStore store;
    private final Path work;

    QuantizeWorker(KafkaTemplate<String, String> kafka, ArtifactStore store, @Value("${hexforge.work-dir}") Path work) {
        this.kafka = kafka;
        this.store = store;
        this.work = work;
    }

    static String resultKey(String attemptId) {
        return "attempts/" + attemptId + "/completed.json";
    }

    @KafkaListener(topics = "hexforge.stage.quantize.requests.v1", groupId = "hexforge-quantize-service")
    void onRequest(String payload) {
        StageEvents.StageRequest req;
        try {
            req = ContractsJson.read(payload, StageEvents.StageRequest.class);
        } catch (IllegalArgumentException e) {
            LOG.warn("unreadable quantize request dropped: {}", e.getMessage());
            return;
        }
        Path dir = work.resolve(req.attemptId());
        try {
            if (store.exists(resultKey(req.attemptId()))) {
                send(req.jobId(), new String(store.getBytes(resultKey(req.attemptId())), StandardCharsets.UTF_8));
                return;
            }
            send(req.jobId(), ContractsJson.write(new StageEvents.Progress(StageEvents.SCHEMA_VERSION, req.jobId(), req.attemptId(),
                    Stage.QUANTIZE, Instant.now(), 0, "quantizing (" + req.spec().quantize().method() + ")", Map.of())));
            Folders.deleteTree(dir);
            Files.createDirectories(dir);
            Path model = model(req, dir);
            QuantizePipeline.Result r;
            try (Checkpoint ckpt = Checkpoint.open(model)) {
                r = QuantizePipeline.run(ckpt, options(req.spec().quantize()), dir.resolve("out"), (what, done, total) -> { });
            }
            Map<String, Object> report = ContractsJson.MAPPER.convertValue(r.report(), new TypeReference<Map<String, Object>>() { });
            if (!r.report().gatePassed()) {
                QuantizationReport rep = r.report();
                send(req.jobId(), ContractsJson.write(new StageEvents.Failed(StageEvents.SCHEMA_VERSION, req.jobId(), req.attemptId(),
                        Stage.QUANTIZE, Instant.now(), new StageEvents.StageError("ACCURACY_GATE",
                        String.format("perplexity rose by %.4f (%.4f -> %.4f), more than the allowed %.4f; worst layers: %s",
                                rep.deltaPerplexity(), rep.floatPerplexity(), rep.quantizedPerplexity(), rep.maxDeltaPerplexity(),
                                rep.worstLayers()),
                        "raise quantize.maxDeltaPpl, use more bits or a smaller group, keep sensitive layers in float "
                                + "(quantize.keep), or calibrate with data like your use"), report)));
                return;
            }
            ArtifactStore.StoredFolder stored = store.putFolder(r.outputs().get(0));
            StageEvents.Completed done = new StageEvents.Completed(StageEvents.SCHEMA_VERSION, req.jobId(), req.attemptId(),
                    Stage.QUANTIZE, Instant.now(), List.of(new StageEvents.ArtifactRef(stored.sha256(), "quantized-checkpoint",
                    stored.sha256(), stored.size(), stored.key())), report);
            store.putJson(resultKey(req.attemptId()), ContractsJson.MAPPER.valueToTree(done));
            send(req.jobId(), ContractsJson.write(done));
        } catch (Exception e) {
            LOG.info("quantize attempt {} failed: {}", req.attemptId(), e.getMessage());
            String code = e instanceof QuantizationException ? "QUANTIZE_INVALID" : "INTERNAL";
            send(req.jobId(), ContractsJson.write(new StageEvents.Failed(StageEvents.SCHEMA_VERSION, req.jobId(), req.attemptId(),
                    Stage.QUANTIZE, Instant.now(), new StageEvents.StageError(code, String.valueOf(e.getMessage()),
                    "fix the quantize settings or the model and resume the job"), Map.of())));
        } finally {
            Folders.deleteQuietly(dir);
        }
    }

    /** The previous stage's output when there is one, else the job's model. */
    private Path model(StageEvents.StageRequest req, Path dir) {
        if (!req.inputs().isEmpty()) {
            Path in = dir.resolve("model");
            store.getFolder(req.inputs().get(0).sha256(), in);
            return in;
        }
        if (req.spec().model().path() == null) {
            throw new IllegalArgumentException("model uploads are not supported by this quantize service yet; give model.path");
        }
        return Path.of(req.spec().model().path());
    }

    private QuantizeOptions options(JobSpec.Quantize q) {
        Path calib = q.calibration() != null ? Path.of(q.calibration()) : BundledData.calibration(work);
        return new QuantizeOptions(q.method(), new QuantSpec(q.bits(), q.group(), q.symmetric() || q.bits() == 8 && q.group() == 0),
                q.keep(), "checkpoint", ExportOptions.dynamic(),
                new QuantizeOptions.Calibration(calib, q.calibrationSamples(), q.calibrationLength(), 0),
                Gptq.Options.defaults(), BundledData.evalText(work), 128, q.maxDeltaPpl(), q.auto().maxExtraBytesPercent());
    }

    private void send(String key, String payload) {
        try {
            kafka.send(Topics.STAGE_EVENTS, key, payload).get(30, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new IllegalStateException("cannot report to " + Topics.STAGE_EVENTS + ": " + e.getMessage(), e);
        }
    }
}
