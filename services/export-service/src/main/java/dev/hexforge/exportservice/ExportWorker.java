package dev.hexforge.exportservice;

import dev.hexforge.checkpoint.NonFinite;
import dev.hexforge.contracts.Stage;
import dev.hexforge.contracts.StageEvents;
import dev.hexforge.pass.ExportPass;
import dev.hexforge.stage.Attempt;
import dev.hexforge.stage.StageServiceProperties;
import dev.hexforge.stage.StageWorker;
import dev.hexforge.store.ArtifactStore;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.stereotype.Component;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;

/** Runs {@link ExportPass} on the job's model (or the quantize stage's checkpoint) and stores each export folder. */
@Component
class ExportWorker extends StageWorker {

    ExportWorker(KafkaTemplate<String, String> kafka, ArtifactStore store, StageServiceProperties settings) {
        super(Stage.EXPORT, kafka, store, settings.workDir(), Duration.ofSeconds(5));
    }

    @Override
    protected String startMessage(StageEvents.StageRequest request) {
        return "exporting";
    }

    /** A redelivered attempt continues the export its killed run left in its output folder. */
    @Override
    protected String resumableOutput() {
        return "out";
    }

    @Override
    protected StageEvents.Completed run(Attempt a) {
        ExportPass.Result r = ExportPass.run(a.model(), NonFinite.allowedIf(a.spec().allowNonFinite()), ExportPass.options(a.spec()), a.dir().resolve("out"),
                (what, done, total) -> a.progress(total == 0 ? 0 : 90.0 * done / total, what, Map.of(), false));
        return a.completed(r.outputs().stream().map(o -> a.storeOutput(o.dir(), o.kind())).toList(), r.report());
    }
}
