package dev.hexforge.lora.train;

import dev.hexforge.kernels.Kernels;
import dev.hexforge.checkpoint.Checkpoint;
import dev.hexforge.forward.DecoderWeights;
import dev.hexforge.lora.LoraAdapter;
import dev.hexforge.lora.data.DatasetReader;
import dev.hexforge.lora.data.EncodedExample;
import dev.hexforge.lora.data.ExampleEncoder;
import dev.hexforge.testing.Fixtures;
import dev.hexforge.tokenizer.Tokenizer;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The training forward's response loss on eval.json against the reference run's figures (results.json). */
class LossAgainstReferenceTest {
    static DecoderWeights weights;
    static List<TrainingExample> eval;

    @BeforeAll
    static void load() {
        try (Checkpoint ckpt = Checkpoint.open(Fixtures.qwen2Tiny()); Tokenizer tok = Tokenizer.load(Fixtures.qwen2Tiny())) {
            weights = DecoderWeights.load(ckpt);
            eval = new ExampleEncoder(tok, 256).encode(DatasetReader.read(Fixtures.root().resolve("lora-task/eval.json")))
                    .examples().stream().map(EncodedExample::example).toList();
        }
    }

    static double meanLoss(LoraTrainingModel<?> model) {
        double sum = 0;
        int n = 0;
        for (int i = 0; i < eval.size(); i += 16) {
            LoraTrainingModel.Loss l = model.loss(eval.subList(i, Math.min(eval.size(), i + 16)));
            sum += l.sum();
            n += l.tokens();
        }
        return sum / n;
    }

    @Test
    void baseModelLossMatchesTheReference() {
        double ref = Fixtures.json(Fixtures.root().resolve("lora-task/results.json")).path("base").path("eval_response_loss").asDouble();
        try (Kernels<float[]> k = Kernels.float32(1)) {
            LoraParams<float[]> p = LoraParams.from(k, weights.config(),
                    zeroAdapter());
            assertEquals(ref, meanLoss(new LoraTrainingModel<>(k, weights, p)), 1e-4);
        }
    }

    @Test
    void referenceAdapterLossMatchesTheReference() {
        double ref = Fixtures.json(Fixtures.root().resolve("lora-task/results.json")).path("merged").path("eval_response_loss").asDouble();
        try (Kernels<float[]> k = Kernels.float32(2)) {
            LoraAdapter adapter = LoraAdapter.read(Fixtures.root().resolve("lora-task/reference_adapter"), weights.config());
            assertEquals(ref, meanLoss(new LoraTrainingModel<>(k, weights, LoraParams.from(k, weights.config(), adapter))), 1e-4);
        }
    }

    /**
     * A large model's path — no transposed copies, the forward reading each frozen weight itself by dot products —
     * against a small model's, with dropout on: the same loss and gradients up to float32 rounding.
     */
    @Test
    void theFrozenPathOfLargeModelsGivesTheSmallModelsLossAndGradients() {
        List<TrainingExample> batch = eval.subList(0, 8);
        try (Kernels<float[]> k = Kernels.float32(2)) {
            LoraAdapter adapter = LoraAdapter.read(Fixtures.root().resolve("lora-task/reference_adapter"), weights.config());
            LoraParams<float[]> small = LoraParams.from(k, weights.config(), adapter);
            LoraParams<float[]> large = LoraParams.from(k, weights.config(), adapter);
            double a = new LoraTrainingModel<>(k, weights, small).forwardBackward(batch, 1e-2, 3).sum();
            double b = new LoraTrainingModel<>(k, weights, large, 0).forwardBackward(batch, 1e-2, 3).sum();
            assertEquals(a, b, 1e-5 * Math.abs(a));
            for (int m = 0; m < small.modules().size(); m++) {
                close(small.modules().get(m).gradA, large.modules().get(m).gradA, "gradA of module " + m);
                close(small.modules().get(m).gradB, large.modules().get(m).gradB, "gradB of module " + m);
            }
        }
    }

    /**
     * A bf16 checkpoint's frozen weights held as bf16 give the loss and gradients, bit for bit, of the same values
     * held as float32, on the large models' path (no transposed copies) and the small models' one.
     */
    @Test
    void frozenWeightsHeldAsBf16GiveTheLossAndGradientsOfTheirFloat32Values(@org.junit.jupiter.api.io.TempDir java.nio.file.Path tmp) {
        dev.hexforge.synth.SyntheticCheckpoint.write(dev.hexforge.synth.SyntheticCheckpoint.Options.of(
                dev.hexforge.synth.Preset.TINY, dev.hexforge.safetensors.DType.BF16, 4), tmp, dev.hexforge.progress.Progress.NONE);
        List<TrainingExample> batch = eval.subList(0, 6);
        try (Checkpoint c = Checkpoint.open(tmp); Kernels<float[]> k = Kernels.float32(2)) {
            DecoderWeights held = DecoderWeights.load(c);
            assertEquals(2L * held.config().vocabSize() * held.config().hiddenSize(), held.embedMatrix().bytes());
            DecoderWeights widened = held.withLinears((l, lin) -> held.layer(l).weight(lin))
                    .withReplacements(java.util.Map.of(dev.hexforge.checkpoint.TensorNames.EMBED, held.embed()));
            LoraAdapter adapter = LoraAdapter.read(Fixtures.root().resolve("lora-task/reference_adapter"), held.config());
            for (long budget : new long[]{0, 1L << 26}) {
                LoraParams<float[]> a = LoraParams.from(k, held.config(), adapter);
                LoraParams<float[]> b = LoraParams.from(k, held.config(), adapter);
                double la = new LoraTrainingModel<>(k, held, a, budget).forwardBackward(batch, 1e-2, 3).sum();
                double lb = new LoraTrainingModel<>(k, widened, b, budget).forwardBackward(batch, 1e-2, 3).sum();
                assertEquals(lb, la, "loss, transposed budget " + budget);
                for (int m = 0; m < a.modules().size(); m++) {
                    org.junit.jupiter.api.Assertions.assertArrayEquals(b.modules().get(m).gradA, a.modules().get(m).gradA,
                            "gradA of module " + m + ", budget " + budget);
                    org.junit.jupiter.api.Assertions.assertArrayEquals(b.modules().get(m).gradB, a.modules().get(m).gradB,
                            "gradB of module " + m + ", budget " + budget);
                }
            }
        }
    }

    private static void close(float[] expected, float[] got, String what) {
        double scale = 0;
        for (float v : expected) {
            scale = Math.max(scale, Math.abs(v));
        }
        assertTrue(scale > 0, what + " is zero");
        for (int i = 0; i < expected.length; i++) {
            assertEquals(expected[i], got[i], 1e-4 * scale, what + " at " + i);
        }
    }

    static LoraAdapter zeroAdapter() {
        LoraAdapter ref = LoraAdapter.read(Fixtures.root().resolve("lora-task/reference_adapter"), weights.config());
        var zero = new java.util.LinkedHashMap<String, DecoderWeights.LowRankDelta>();
        ref.deltas().forEach((name, d) -> zero.put(name, new DecoderWeights.LowRankDelta(d.a(), new float[d.b().length], d.rank(), d.scale())));
        return new LoraAdapter(ref.config(), zero);
    }
}
