package dev.hexforge.lora.train;

import dev.hexforge.kernels.Kernels;
import dev.hexforge.checkpoint.Checkpoint;
import dev.hexforge.checkpoint.TensorNames.Linear;
import dev.hexforge.forward.DecoderWeights;
import dev.hexforge.lora.LoraConfig;
import dev.hexforge.testing.Fixtures;
import dev.hexforge.progress.Progress;
import dev.hexforge.safetensors.DType;
import dev.hexforge.synth.Preset;
import dev.hexforge.synth.SyntheticCheckpoint;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.nio.file.Path;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The hand-written backward against central finite differences in float64, on qwen2-tiny with adapters on all
 * seven linear kinds, dropout on (masks replay exactly from the seed) and B started non-zero so A has gradients.
 */
class GradientCheckTest {

    @TempDir
    Path tmp;

    @Test
    void everyParameterKindMatchesFiniteDifferences() {
        try (Checkpoint ckpt = Checkpoint.open(Fixtures.qwen2Tiny())) {
            check(DecoderWeights.load(ckpt));
        }
    }

    /** Qwen3 (per-head q/k norms between the projections and RoPE, heads × head_dim ≠ hidden) and Llama 3's RoPE. */
    @ParameterizedTest
    @EnumSource(value = Preset.class, names = {"TINY_QWEN3", "TINY_LLAMA3"})
    void theNewFamiliesMatchFiniteDifferences(Preset preset) {
        Path dir = tmp.resolve(preset.id());
        SyntheticCheckpoint.write(SyntheticCheckpoint.Options.of(preset, DType.F32, 5), dir, Progress.NONE);
        try (Checkpoint ckpt = Checkpoint.open(dir)) {
            assertEquals(preset == Preset.TINY_QWEN3, ckpt.config().qkNorm());
            check(DecoderWeights.load(ckpt));
        }
    }

    private static void check(DecoderWeights weights) {
        LoraConfig cfg = new LoraConfig(4, 8, 0.1, List.of("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
                "down_proj"), false, null);
        Kernels<double[]> k = Kernels.float64();
        LoraParams<double[]> params = LoraParams.init(k, weights.config(), cfg, 7);
        SplittableRandom rng = new SplittableRandom(3);
        for (LoraParams.Module<double[]> m : params.modules()) {
            for (int i = 0; i < m.b.length; i++) {
                m.b[i] = rng.nextGaussian() * 0.05;
            }
        }
        LoraTrainingModel<double[]> model = new LoraTrainingModel<>(k, weights, params);
        List<TrainingExample> batch = List.of(example(rng, 9, 4), example(rng, 14, 6), example(rng, 6, 5));
        long seed = 42;
        params.zeroGradients();
        model.forwardBackward(batch, 1.0, seed);

        double h = 1e-6;
        List<String> report = new ArrayList<>();
        double worst = 0;
        for (LoraParams.Module<double[]> m : params.modules()) {
            if (m.layer != 0 && m.layer != weights.config().numLayers() - 1) {
                continue;
            }
            for (boolean isA : new boolean[]{true, false}) {
                double[] p = isA ? m.a : m.b;
                double[] g = isA ? m.gradA : m.gradB;
                double num = 0;
                double den = 0;
                for (int s = 0; s < 6; s++) {
                    int i = rng.nextInt(p.length);
                    double keep = p[i];
                    p[i] = keep + h;
                    double up = model.forwardBackwardLossOnly(batch, seed);
                    p[i] = keep - h;
                    double down = model.forwardBackwardLossOnly(batch, seed);
                    p[i] = keep;
                    double fd = (up - down) / (2 * h);
                    num += (fd - g[i]) * (fd - g[i]);
                    den += fd * fd;
                }
                double rel = Math.sqrt(num / Math.max(den, 1e-30));
                worst = Math.max(worst, rel);
                report.add("layer " + m.layer + " " + m.linear + (isA ? " A " : " B ") + String.format("%.2e", rel));
                assertTrue(den > 1e-20, "gradient of " + m.linear + (isA ? " A" : " B") + " is zero: the check would prove nothing");
            }
        }
        assertTrue(worst <= 1e-4, "relative errors: " + report);
        assertTrue(report.size() == 2 * 2 * Linear.values().length);
    }

    private static TrainingExample example(SplittableRandom rng, int length, int targets) {
        int[] ids = new int[length];
        boolean[] target = new boolean[length];
        for (int i = 0; i < length; i++) {
            ids[i] = rng.nextInt(2048);
            target[i] = i >= length - targets;
        }
        return new TrainingExample(ids, target);
    }
}
