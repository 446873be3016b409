package dev.hexforge.quantizeservice;

import com.fasterxml.jackson.core.type.TypeReference;
import dev.hexforge.checkpoint.Checkpoint;
import dev.hexforge.contracts.ContractsJson;
import dev.hexforge.contracts.JobSpec;
import dev.hexforge.contracts.Stage;
import dev.hexforge.contracts.StageEvents;
import dev.hexforge.onnx.export.ExportOptions;
import dev.hexforge.quant.BundledData;
import dev.hexforge.quant.QuantSpec;
import dev.hexforge.quant.QuantizationException;
import dev.hexforge.quant.QuantizationReport;
import dev.hexforge.quant.QuantizeOptions;
import dev.hexforge.quant.QuantizePipeline;
import dev.hexforge.quant.gptq.Gptq;
import dev.hexforge.stage.Attempt;
import dev.hexforge.stage.StageFailure;
import dev.hexforge.stage.StageServiceConfig;
import dev.hexforge.stage.StageWorker;
import dev.hexforge.store.ArtifactStore;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.support.Acknowledgment;
import org.springframework.stereotype.Component;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

/**
 * Quantizes the job's model (or the previous stage's output), measures the perplexity change on the evaluation
 * text, and either stores a quantized checkpoint for the export stage or fails the stage at the accuracy gate with
 * the report attached.
 */
@Component
class QuantizeWorker extends StageWorker {

    QuantizeWorker(KafkaTemplate<String, String> kafka, ArtifactStore store, @Value("${hexforge.work-dir}") Path work) {
        super(Stage.QUANTIZE, kafka, store, work, Duration.ofSeconds(5));
    }

    @KafkaListener(id = "quantize-requests", topics = "hexforge.stage.quantize.requests.v1", groupId = "hexforge-quantize-service",
            containerFactory = StageServiceConfig.STAGE_REQUESTS)
    void onRequest(String payload, Acknowledgment ack) {
        submit(payload, ack);
    }

    @Override
    protected String startMessage(StageEvents.StageRequest request) {
        return "quantizing (" + request.spec().quantize().method() + ")";
    }

    @Override
    protected StageEvents.Completed run(Attempt a) {
        QuantizePipeline.Result r;
        try (Checkpoint ckpt = Checkpoint.open(a.model())) {
            r = QuantizePipeline.run(ckpt, options(a, a.spec().quantize()), a.dir().resolve("out"),
                    (what, done, total) -> a.progress(total == 0 ? 0 : 90.0 * done / total, what, Map.of(), false));
        }
        Map<String, Object> report = ContractsJson.MAPPER.convertValue(r.report(), new TypeReference<Map<String, Object>>() { });
        if (!r.report().gatePassed()) {
            QuantizationReport rep = r.report();
            throw new StageFailure(new StageEvents.StageError("ACCURACY_GATE",
                    String.format("perplexity rose by %.4f (%.4f -> %.4f), more than the allowed %.4f; worst layers: %s",
                            rep.deltaPerplexity(), rep.floatPerplexity(), rep.quantizedPerplexity(), rep.maxDeltaPerplexity(),
                            rep.worstLayers()),
                    "raise quantize.maxDeltaPpl, use more bits or a smaller group, keep sensitive layers in float "
                            + "(quantize.keep), or calibrate with data like your use"), report);
        }
        return a.completed(List.of(a.storeOutput(r.outputs().get(0), "quantized-checkpoint")), report);
    }

    @Override
    protected StageEvents.StageError triage(Exception e) {
        if (e instanceof QuantizationException) {
            return new StageEvents.StageError("QUANTIZE_INVALID", message(e),
                    "fix the quantize settings or the model and resume the job");
        }
        return super.triage(e);
    }

    private QuantizeOptions options(Attempt a, JobSpec.Quantize q) {
        Path calib = q.calibration() != null ? a.input("quantize.calibration", q.calibration()) : BundledData.calibration(work());
        return new QuantizeOptions(q.method(), new QuantSpec(q.bits(), q.group(), q.symmetric() || q.bits() == 8 && q.group() == 0),
                q.keep(), "checkpoint", ExportOptions.dynamic(),
                new QuantizeOptions.Calibration(calib, q.calibrationSamples(), q.calibrationLength(), 0),
                Gptq.Options.defaults(), BundledData.evalText(work()), 128, q.maxDeltaPpl(), q.auto().maxExtraBytesPercent(),
                q.accuracyLevel());
    }
}
