package dev.hexforge.quant.awq;

import dev.hexforge.checkpoint.Checkpoint;
import dev.hexforge.eval.Perplexity;
import dev.hexforge.forward.DecoderForward;
import dev.hexforge.forward.DecoderWeights;
import dev.hexforge.quant.calib.LayerSource;
import dev.hexforge.progress.Progress;
import dev.hexforge.quant.QuantSpec;
import dev.hexforge.quant.QuantizedModel;
import dev.hexforge.quant.calib.CalibrationSet;
import dev.hexforge.testing.Fixtures;
import dev.hexforge.tokenizer.Tokenizer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class AwqTest {
    static Checkpoint ckpt;
    static DecoderWeights base;
    static CalibrationSet calib;

    @BeforeAll
    static void load() {
        ckpt = Checkpoint.open(Fixtures.qwen2Tiny());
        base = DecoderWeights.load(ckpt);
        try (Tokenizer tok = Tokenizer.load(Fixtures.qwen2Tiny())) {
            calib = CalibrationSet.load(Fixtures.root().resolve("calib.jsonl"), tok, 32, 512, 0);
        }
    }

    @AfterAll
    static void close() {
        ckpt.close();
    }

    @Test
    void everyScaledGroupMeetsItsObjectiveAtLeastAsWellAsRtnAt4Bits() {
        Awq.Result r = Awq.run(LayerSource.of(base), calib, QuantSpec.int4Group128(), List.of(), Progress.NONE);
        assertEquals(3 * 4, r.groups().size(), "GQA: v->o is skipped, three groups per layer");
        for (Awq.GroupError g : r.groups()) {
            assertTrue(g.awq() <= g.rtn() * (1 + 1e-9), "layer " + g.layer() + " " + g.group() + ": AWQ " + g.awq() + " > RTN " + g.rtn());
        }
        double mean = r.groups().stream().mapToDouble(g -> 1 - g.awq() / g.rtn()).average().orElse(0);
        double meanFinal = r.groups().stream().mapToDouble(g -> 1 - g.finalError() / g.rtn()).average().orElse(0);
        System.out.printf("AWQ int4 g128: mean module output-error reduction vs RTN %.1f%% at the search, %.1f%% with the final"
                + " weights, over %d groups%n", mean * 100, meanFinal * 100, r.groups().size());
        assertEquals(28, r.model().linears().size());
        assertEquals(8, r.model().replacedFloats().size(), "folded norms of every layer");
    }

    @Test
    void at3BitsAwqPerplexityIsLowerThanRtn() {
        QuantSpec three = new QuantSpec(3, 128, false);
        int[] ids = Fixtures.evalTxtIds();
        double rtn = Perplexity.evaluate(new DecoderForward(QuantizedModel.rtn(ckpt, three, List.of()).fakeQuantized(base)), ids, 128, null).perplexity();
        CalibrationSet full;
        try (Tokenizer tok = Tokenizer.load(Fixtures.qwen2Tiny())) {
            full = CalibrationSet.load(Fixtures.root().resolve("calib.jsonl"), tok, 128, 512, 0);
        }
        QuantizedModel awq = Awq.run(LayerSource.of(base), full, three, List.of(), Progress.NONE).model();
        double a = Perplexity.evaluate(new DecoderForward(awq.fakeQuantized(base)), ids, 128, null).perplexity();
        System.out.printf("3-bit perplexity: RTN %.3f, AWQ %.3f%n", rtn, a);
        assertTrue(a < rtn, "3-bit AWQ perplexity " + a + " vs RTN " + rtn);
    }

    @Test
    void foldingKeepsTheFloatModelExact() {
        // AWQ with 8-bit quantization of nothing: keep every linear, so only scales are folded; the model must not change
        Awq.Result r = Awq.run(LayerSource.of(base), calib, QuantSpec.int4Group128(), List.of("_proj"), Progress.NONE);
        assertEquals(0, r.model().linears().size());
        DecoderForward folded = new DecoderForward(r.model().fakeQuantized(base));
        DecoderForward original = new DecoderForward(base);
        int[] ids = java.util.Arrays.copyOf(Fixtures.evalTxtIds(), 64);
        float[][] a = folded.logits(ids);
        float[][] b = original.logits(ids);
        for (int t = 0; t < ids.length; t++) {
            for (int i = 0; i < a[t].length; i++) {
                assertEquals(b[t][i], a[t][i], 1e-3f);
            }
        }
    }
}
