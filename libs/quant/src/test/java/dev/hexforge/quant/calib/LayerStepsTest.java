package dev.hexforge.quant.calib;

import dev.hexforge.checkpoint.Checkpoint;
import dev.hexforge.checkpoint.TensorNames.Linear;
import dev.hexforge.testing.Fixtures;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

/**
 * The layer run a part at a time (what GPTQ does, changing weights between parts) gives exactly what running it
 * from scratch up to each linear gives on the weights of that moment, for one sequence and for stacked ones.
 */
class LayerStepsTest {
    @Test
    void eachPartSeesTheWeightsAsTheyAreWhenItRuns() {
        try (Checkpoint ckpt = Checkpoint.open(Fixtures.qwen2Tiny())) {
            LayerSource source = LayerSource.of(ckpt);
            LayerForward lf = new LayerForward(ckpt.config());
            SplittableRandom rng = new SplittableRandom(3);
            for (int sequences : new int[]{1, 3}) {
                int len = 17;
                int[] ids = rng.ints((long) sequences * len, 0, ckpt.config().vocabSize()).toArray();
                float[] x = source.embed(ids);
                LayerParams p = source.layer(1);
                LayerForward.Steps steps = lf.new Steps(p, x, len);
                for (List<Linear> subset : List.of(List.of(Linear.K, Linear.V, Linear.Q), List.of(Linear.O),
                        List.of(Linear.UP, Linear.GATE), List.of(Linear.DOWN))) {
                    Linear first = subset.get(0);
                    assertArrayEquals(lf.run(p, x, len, first).inputOf(first), steps.inputOf(first), first + ", " + sequences);
                    for (Linear l : subset) { // as a quantizer would: the subset's weights change
                        float[] w = p.weights.get(l).clone();
                        for (int i = 0; i < w.length; i++) {
                            w[i] = Math.round(w[i] * 64) / 64f;
                        }
                        p.weights.put(l, w);
                    }
                }
                assertArrayEquals(lf.run(p, x, len).output(), steps.output(), "output, " + sequences);
            }
        }
    }
}
