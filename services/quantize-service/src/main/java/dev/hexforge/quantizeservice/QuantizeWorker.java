package dev.hexforge.quantizeservice;

import dev.hexforge.checkpoint.NonFinite;
import com.fasterxml.jackson.core.type.TypeReference;
import dev.hexforge.contracts.ContractsJson;
import dev.hexforge.contracts.ErrorCode;
import dev.hexforge.contracts.JobSpec;
import dev.hexforge.contracts.Stage;
import dev.hexforge.contracts.StageEvents;
import dev.hexforge.pass.QuantizePass;
import dev.hexforge.quant.BundledData;
import dev.hexforge.quant.QuantizePipeline;
import dev.hexforge.stage.Attempt;
import dev.hexforge.stage.StageFailure;
import dev.hexforge.stage.StageServiceProperties;
import dev.hexforge.stage.StageWorker;
import dev.hexforge.store.ArtifactStore;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.stereotype.Component;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

/** Runs {@link QuantizePass} on the job's model (or the previous stage's output) and stores the quantized checkpoint. */
@Component
class QuantizeWorker extends StageWorker {

    QuantizeWorker(KafkaTemplate<String, String> kafka, ArtifactStore store, StageServiceProperties settings) {
        super(Stage.QUANTIZE, kafka, store, settings.workDir(), Duration.ofSeconds(5));
    }

    @Override
    protected String startMessage(StageEvents.StageRequest request) {
        return "quantizing (" + request.spec().quantize().method() + ")";
    }

    /** A quantize killed mid-run continues after its last finished layer when its request comes again. */
    @Override
    protected String resumableOutput() {
        return OUT;
    }

    private static final String OUT = "out";

    @Override
    protected StageEvents.Completed run(Attempt a) {
        JobSpec.Quantize q = a.spec().quantize();
        Path calib = q.calibration() != null ? a.input("quantize.calibration", q.calibration()) : BundledData.calibration(work());
        QuantizePipeline.Result r = QuantizePass.run(a.model(), NonFinite.allowedIf(a.spec().allowNonFinite()), QuantizePass.options(a.spec(), calib, BundledData.evalText(work()), work().resolve("cache")),
                a.dir().resolve(OUT), (what, done, total) -> a.progress(total == 0 ? 0 : 90.0 * done / total, what, Map.of(), false));
        Map<String, Object> report = ContractsJson.MAPPER.convertValue(r.report(), new TypeReference<Map<String, Object>>() { });
        if (!r.passed()) {
            throw new StageFailure(ErrorCode.ACCURACY_GATE.error(r.gateMessage()), report);
        }
        return a.completed(List.of(a.storeOutput(r.checkpoint(), QuantizePass.KIND)), report);
    }
}
