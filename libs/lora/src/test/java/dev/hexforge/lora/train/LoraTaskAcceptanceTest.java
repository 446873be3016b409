package dev.hexforge.lora.train;

import com.fasterxml.jackson.databind.JsonNode;
import dev.hexforge.checkpoint.Checkpoint;
import dev.hexforge.forward.DecoderWeights;
import dev.hexforge.lora.LoraAdapter;
import dev.hexforge.lora.data.DatasetReader;
import dev.hexforge.lora.data.ExampleEncoder;
import dev.hexforge.testing.Fixtures;
import dev.hexforge.tokenizer.Tokenizer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The acceptance run: qwen2-tiny on lora-task/train.json with the reference run's settings (results.json:
 * r 8, alpha 16, dropout 0.05, q/k/v/o, AdamW lr 5e-3, 20 warm-up steps then cosine, batch 16, 8 epochs, seed 0)
 * must reach eval response loss ≤ 0.60 and greedy exact match ≥ 70% on eval.json (reference: 0.539 and 79%).
 */
class LoraTaskAcceptanceTest {
    @TempDir
    Path tmp;

    @Test
    void trainingTheTinyModelOnTheTaskReachesTheReferenceQuality() {
        JsonNode ref = Fixtures.json(Fixtures.root().resolve("lora-task/results.json")).path("training");
        TrainingOptions o = new TrainingOptions(ref.path("r").asInt(), ref.path("lora_alpha").asDouble(),
                ref.path("lora_dropout").asDouble(), List.of("q_proj", "k_proj", "v_proj", "o_proj"), false,
                ref.path("batch_size").asInt(), 1, ref.path("lr").asDouble(), ref.path("epochs").asInt(), 256,
                ref.path("seed").asLong(), 0.05, "cosine", 0, 1.0, 0, 0, 16, 2);
        List<double[]> steps = new ArrayList<>();
        TrainingReport report;
        try (Checkpoint ckpt = Checkpoint.open(Fixtures.qwen2Tiny()); Tokenizer tok = Tokenizer.load(Fixtures.qwen2Tiny())) {
            DecoderWeights base = DecoderWeights.load(ckpt);
            ExampleEncoder enc = new ExampleEncoder(tok, o.maxLength());
            var train = enc.encode(DatasetReader.read(Fixtures.root().resolve("lora-task/train.json")));
            var eval = enc.encode(DatasetReader.read(Fixtures.root().resolve("lora-task/eval.json")));
            report = new LoraTrainer(base, tok, o, new TrainingListener() {
                @Override
                public void onStep(StepMetrics m) {
                    steps.add(new double[]{m.step(), m.loss(), m.learningRate()});
                }

                @Override
                public void onEpoch(EpochMetrics m) {
                    System.out.printf("epoch %d train %.4f eval %.4f exact %.3f%n", m.epoch(), m.trainLoss(), m.evalLoss(), m.exactMatch());
                }
            }).train(train.examples(), train.report(), eval.examples(), tmp.resolve("adapter"), "qwen2-tiny");
            System.out.printf("%.1f s, %.0f tokens/s%n", report.seconds(), report.tokensPerSecond());
            TrainingListener.EpochMetrics last = report.last();
            assertEquals(ref.path("steps").asInt(), report.steps());
            assertEquals(8, report.epochs().size());
            assertTrue(last.evalLoss() <= 0.60, "eval response loss " + last.evalLoss());
            assertTrue(last.exactMatch() >= 0.70, "exact match " + last.exactMatch());
            // the written adapter is the trained one: read back, it scores the same
            LoraAdapter written = LoraAdapter.read(tmp.resolve("adapter"), base.config());
            assertEquals(last.exactMatch(), Evaluation.exactMatch(base, written, tok, eval.examples(), 16), 1e-12);
        }
        assertEquals(0.0, steps.get(0)[2], "step 1 runs at lr 0 (warm-up from 0, as Hugging Face's scheduler)");
        assertEquals(5e-3, steps.get(20)[2], 1e-12);
    }
}
