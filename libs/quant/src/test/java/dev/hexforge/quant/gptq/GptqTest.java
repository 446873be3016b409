package dev.hexforge.quant.gptq;

import dev.hexforge.checkpoint.Checkpoint;
import dev.hexforge.eval.Perplexity;
import dev.hexforge.forward.DecoderForward;
import dev.hexforge.forward.DecoderWeights;
import dev.hexforge.quant.calib.LayerSource;
import dev.hexforge.progress.Progress;
import dev.hexforge.quant.QuantSpec;
import dev.hexforge.quant.QuantizedLinear;
import dev.hexforge.quant.QuantizedModel;
import dev.hexforge.quant.calib.CalibrationSet;
import dev.hexforge.quant.rtn.Rtn;
import dev.hexforge.testing.Fixtures;
import dev.hexforge.tokenizer.Tokenizer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class GptqTest {
    static Checkpoint ckpt;
    static DecoderWeights base;
    static CalibrationSet calib;

    @BeforeAll
    static void load() {
        ckpt = Checkpoint.open(Fixtures.qwen2Tiny());
        base = DecoderWeights.load(ckpt);
        try (Tokenizer tok = Tokenizer.load(Fixtures.qwen2Tiny())) {
            calib = CalibrationSet.load(Fixtures.root().resolve("calib.jsonl"), tok, 128, 512, 0);
        }
    }

    @AfterAll
    static void close() {
        ckpt.close();
    }

    @Test
    void withAnIdentityHessianGptqIsRtn() {
        int out = 8;
        int in = 64;
        float[] w = new SplittableRandom(1).doubles(out * in, -1, 1).collect(() -> new float[out * in], (a, v) -> { }, (a, b) -> { });
        SplittableRandom rng = new SplittableRandom(2);
        for (int i = 0; i < w.length; i++) {
            w[i] = (float) rng.nextGaussian();
        }
        double[] h = new double[in * in];
        for (int i = 0; i < in; i++) {
            h[i * in + i] = 1;
        }
        QuantSpec spec = new QuantSpec(4, 32, false);
        QuantizedLinear g = Gptq.quantize(w, out, in, h, spec, new Gptq.Options(16, 0.0, false));
        assertArrayEquals(Rtn.quantize(w, out, in, spec).q(), g.q());
    }

    @Test
    void oneInverseServesEveryLinearOfASubset() {
        int in = 48;
        SplittableRandom rng = new SplittableRandom(3);
        int rows = 80;
        double[] h = new double[in * in];
        float[] x = new float[rows * in];
        for (int i = 0; i < x.length; i++) {
            x[i] = (float) rng.nextGaussian();
        }
        for (int t = 0; t < rows; t++) {
            for (int i = 0; i < in; i++) {
                for (int j = 0; j < in; j++) {
                    h[i * in + j] += 2.0 / rows * x[t * in + i] * x[t * in + j];
                }
            }
        }
        for (int j = 0; j < in; j++) { // a column no input reached
            h[5 * in + j] = 0;
            h[j * in + 5] = 0;
        }
        QuantSpec spec = new QuantSpec(4, 16, false);
        double[] given = h.clone();
        for (Gptq.Options opt : List.of(new Gptq.Options(16, 0.01, false), new Gptq.Options(16, 0.01, true))) {
            Gptq.Prepared shared = Gptq.prepare(h, in, opt);
            assertArrayEquals(given, h, "prepare reads the Hessian without changing it (the runner keeps it for the reports)");
            assertTrue(shared.dead()[5] && !shared.dead()[4]);
            for (int out : new int[]{8, 24}) {
                float[] w = new float[out * in];
                for (int i = 0; i < w.length; i++) {
                    w[i] = (float) rng.nextGaussian();
                }
                QuantizedLinear alone = Gptq.quantize(w, out, in, h, spec, opt);
                QuantizedLinear withShared = Gptq.quantize(w, out, in, shared, spec, opt);
                assertArrayEquals(alone.q(), withShared.q());
                assertArrayEquals(alone.scales(), withShared.scales());
                assertArrayEquals(alone.zeros(), withShared.zeros());
            }
        }
        assertThrows(IllegalArgumentException.class,
                () -> Gptq.quantize(new float[8 * 32], 8, 32, Gptq.prepare(h, in, Gptq.Options.defaults()), spec, Gptq.Options.defaults()));
    }

    @Test
    void gptqBeatsRtnOnEveryLinearAndByThirtyPercentOnAverageAt4Bits() {
        GptqRunner.Result r = GptqRunner.run(LayerSource.of(base), calib, QuantSpec.int4Group128(), Gptq.Options.defaults(), List.of(), Progress.NONE);
        assertTrue(r.errors().size() == 28);
        double sum = 0;
        for (GptqRunner.LayerError e : r.errors()) {
            assertTrue(e.gptq() <= e.rtn() * (1 + 1e-9), e.name() + ": GPTQ " + e.gptq() + " > RTN " + e.rtn());
            sum += e.reduction();
        }
        double mean = sum / r.errors().size();
        System.out.printf("GPTQ int4 g128: mean output-error reduction vs RTN %.1f%% over %d linears%n", mean * 100, r.errors().size());
        assertTrue(mean >= 0.30, "mean error reduction " + mean);
    }

    @Test
    void actOrderAlsoBeatsRtn() {
        GptqRunner.Result r = GptqRunner.run(LayerSource.of(base), calib, QuantSpec.int4Group128(), new Gptq.Options(128, 0.01, true), List.of(), Progress.NONE);
        for (GptqRunner.LayerError e : r.errors()) {
            assertTrue(e.gptq() <= e.rtn() * (1 + 1e-9), e.name() + ": GPTQ " + e.gptq() + " > RTN " + e.rtn());
        }
    }

    @Test
    void at3BitsGptqPerplexityIsLowerThanRtn() {
        QuantSpec three = new QuantSpec(3, 128, false);
        int[] ids = Fixtures.evalTxtIds();
        double rtn = Perplexity.evaluate(new DecoderForward(QuantizedModel.rtn(ckpt, three, List.of()).fakeQuantized(base)), ids, 128, null).perplexity();
        QuantizedModel g = GptqRunner.run(LayerSource.of(base), calib, three, Gptq.Options.defaults(), List.of(), Progress.NONE).model();
        double gptq = Perplexity.evaluate(new DecoderForward(g.fakeQuantized(base)), ids, 128, null).perplexity();
        assertTrue(gptq < rtn, "3-bit GPTQ perplexity " + gptq + " vs RTN " + rtn);
    }
}
