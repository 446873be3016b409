package dev.hexforge.finetuneservice;

import dev.hexforge.checkpoint.Checkpoint;
import dev.hexforge.contracts.Stage;
import dev.hexforge.contracts.StageEvents;
import dev.hexforge.lora.LoraAdapter;
import dev.hexforge.lora.LoraException;
import dev.hexforge.lora.LoraMerge;
import dev.hexforge.stage.Attempt;
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

/** Merges the finetune stage's adapter into the job's base model: a full Hugging Face folder for the next stage. */
@Component
class MergeWorker extends StageWorker {

    MergeWorker(KafkaTemplate<String, String> kafka, ArtifactStore store, @Value("${hexforge.work-dir}") Path work) {
        super(Stage.MERGE, kafka, store, work, Duration.ofSeconds(5));
    }

    @KafkaListener(id = "merge-requests", topics = "hexforge.stage.merge.requests.v1", groupId = "hexforge-finetune-service",
            containerFactory = StageServiceConfig.STAGE_REQUESTS)
    void onRequest(String payload, Acknowledgment ack) {
        submit(payload, ack);
    }

    @Override
    protected StageEvents.Completed run(Attempt a) {
        if (a.request().inputs().isEmpty()) {
            throw new IllegalArgumentException("merge needs the finetune stage's adapter as input");
        }
        Path adapterDir = a.model();
        Path out = a.dir().resolve("out").resolve("model");
        long t0 = System.nanoTime();
        LoraAdapter adapter;
        try (Checkpoint base = Checkpoint.open(a.baseModel())) {
            adapter = LoraAdapter.read(adapterDir, base.config());
            LoraMerge.merge(base, adapter, out);
        }
        return a.completed(List.of(a.storeOutput(out, "hf-model")), Map.of("mergedLinears", adapter.deltas().size(),
                "rank", adapter.config().r(), "scale", adapter.config().scale(), "seconds", (System.nanoTime() - t0) / 1e9));
    }

    @Override
    protected StageEvents.StageError triage(Exception e) {
        if (e instanceof LoraException) {
            return new StageEvents.StageError("ADAPTER_INVALID", message(e), "the adapter does not fit the base model; "
                    + "rerun finetune on this model");
        }
        return super.triage(e);
    }
}
