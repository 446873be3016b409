package dev.hexforge.finetuneservice;

import dev.hexforge.checkpoint.NonFinite;
import dev.hexforge.contracts.Stage;
import dev.hexforge.contracts.StageEvents;
import dev.hexforge.pass.MergePass;
import dev.hexforge.stage.Attempt;
import dev.hexforge.stage.StageServiceProperties;
import dev.hexforge.stage.StageWorker;
import dev.hexforge.store.ArtifactStore;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.stereotype.Component;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

/** Runs {@link MergePass}: the finetune stage's adapter merged into the job's base model, a full Hugging Face folder. */
@Component
class MergeWorker extends StageWorker {

    MergeWorker(KafkaTemplate<String, String> kafka, ArtifactStore store, StageServiceProperties settings) {
        super(Stage.MERGE, kafka, store, settings.workDir(), Duration.ofSeconds(5));
    }

    @Override
    protected StageEvents.Completed run(Attempt a) {
        if (a.request().inputs().isEmpty()) {
            throw new IllegalArgumentException("merge needs the finetune stage's adapter as input");
        }
        MergePass.Result r = MergePass.run(a.baseModel(), NonFinite.allowedIf(a.spec().allowNonFinite()), a.model(), a.dir().resolve("out").resolve("model"));
        return a.completed(List.of(a.storeOutput(r.model(), MergePass.KIND)), r.report());
    }
}
