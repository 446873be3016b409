package dev.hexforge.finetuneservice;

import dev.hexforge.checkpoint.NonFinite;
import com.fasterxml.jackson.databind.JsonNode;
import dev.hexforge.contracts.ContractsJson;
import dev.hexforge.contracts.ErrorCode;
import dev.hexforge.contracts.JobSpec;
import dev.hexforge.contracts.Stage;
import dev.hexforge.contracts.StageEvents;
import dev.hexforge.io.Folders;
import dev.hexforge.lora.LoraException;
import dev.hexforge.lora.train.TrainingCheckpoint;
import dev.hexforge.lora.train.TrainingListener;
import dev.hexforge.pass.FinetunePass;
import dev.hexforge.stage.Attempt;
import dev.hexforge.stage.StageServiceProperties;
import dev.hexforge.stage.StageWorker;
import dev.hexforge.store.ArtifactStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.stereotype.Component;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

/**
 * Trains a LoRA adapter on the job's data and stores it (PEFT format) as the stage's output. Live metrics (loss,
 * learning rate, tokens/s, ETA) go out as progress every few seconds, eval loss and exact match after each epoch.
 * Training checkpoints are kept beside the attempt for the job and mirrored to the artifact store, so a resumed job
 * continues from the last one, on this worker or another.
 */
@Component
class FinetuneWorker extends StageWorker {
    private static final Logger LOG = LoggerFactory.getLogger(FinetuneWorker.class);

    FinetuneWorker(KafkaTemplate<String, String> kafka, ArtifactStore store, StageServiceProperties settings) {
        super(Stage.FINETUNE, kafka, store, settings.workDir(), Duration.ofSeconds(3));
    }

    static String checkpointMarker(String jobId) {
        return "jobs/" + jobId + "/finetune/checkpoint.json";
    }

    @Override
    protected String startMessage(StageEvents.StageRequest request) {
        return "loading the model and data";
    }

    @Override
    protected StageEvents.Completed run(Attempt a) throws Exception {
        JobSpec.Finetune f = a.spec().finetune();
        Path out = work().resolve("jobs").resolve(a.request().jobId()).resolve("adapter");
        a.whileAway(() -> {
            restoreCheckpoint(a.request().jobId(), out);
            return null;
        });
        FinetunePass.Inputs in = new FinetunePass.Inputs(a.model(), NonFinite.allowedIf(a.spec().allowNonFinite()), a.input("finetune.data", f.data()),
                f.evalData() == null ? null : a.input("finetune.evalData", f.evalData()));
        FinetunePass.Result r = FinetunePass.run(in, FinetunePass.options(f), out, new TrainingListener() {
            @Override
            public void onStep(StepMetrics m) {
                a.progress(95.0 * m.step() / m.totalSteps(), String.format("step %d/%d, loss %.4f", m.step(), m.totalSteps(),
                        m.loss()), FinetunePass.finite(Map.of("step", (double) m.step(), "epoch", (double) m.epoch(), "loss", m.loss(),
                        "learningRate", m.learningRate(), "tokensPerSecond", m.tokensPerSecond(), "etaSeconds", m.etaSeconds())),
                        m.step() == 1 || m.step() == m.totalSteps()); // the curve's ends always
            }

            @Override
            public void onEpoch(EpochMetrics m) {
                a.progress(-1, "epoch " + m.epoch() + " evaluated", FinetunePass.finite(Map.of("epoch", (double) m.epoch(),
                        "trainLoss", m.trainLoss(), "evalLoss", m.evalLoss(), "exactMatch", m.exactMatch())), true);
            }

            @Override
            public void onCheckpoint(int step, Path dir) {
                // the mirror lets another worker resume the job; the training itself needs only the local checkpoint, so
                // a store away longer than the retry window costs a resumed job some steps, not this attempt
                try {
                    a.whileAway(() -> {
                        ArtifactStore.StoredFolder stored = store().putFolder(dir);
                        store().putJson(checkpointMarker(a.request().jobId()), Map.of("step", step, "sha256", stored.sha256()));
                        return null;
                    });
                } catch (ArtifactStore.StoreException e) {
                    LOG.warn("finetune attempt {}: checkpoint of step {} not mirrored to the store: {}", a.request().attemptId(), step,
                            e.getMessage());
                }
            }
        });
        StageEvents.ArtifactRef ref = a.storeOutput(r.adapter(), FinetunePass.KIND);
        Folders.deleteQuietly(out.getParent());
        return a.completed(List.of(ref), r.report());
    }

    /** Brings back the job's last training checkpoint from the store when this worker has none of its own. */
    private void restoreCheckpoint(String jobId, Path out) {
        if (TrainingCheckpoint.hasAny(out) || !store().exists(checkpointMarker(jobId))) {
            return;
        }
        JsonNode marker = ContractsJson.read(new String(store().getBytes(checkpointMarker(jobId)), StandardCharsets.UTF_8),
                JsonNode.class);
        Path dir = TrainingCheckpoint.folder(out, marker.path("step").asInt());
        Folders.deleteQuietly(dir); // a try cut short leaves files behind
        store().getFolder(marker.path("sha256").asText(), dir);
    }

    /** The LoRA library's own failures (bad targets, a diverging run) are the training's here, not an adapter's. */
    @Override
    protected StageEvents.StageError triage(Exception e) {
        if (e instanceof LoraException) {
            return ErrorCode.TRAINING_FAILED.error(message(e));
        }
        return super.triage(e);
    }
}
