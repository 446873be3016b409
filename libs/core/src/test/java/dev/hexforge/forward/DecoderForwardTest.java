package dev.hexforge.forward;

import com.fasterxml.jackson.databind.JsonNode;
import dev.hexforge.checkpoint.Checkpoint;
import dev.hexforge.eval.Perplexity;
import dev.hexforge.generate.Generator;
import dev.hexforge.kernels.FloatKernels;
import dev.hexforge.kernels.Kernels;
import dev.hexforge.safetensors.SafetensorsFile;
import dev.hexforge.testing.Fixtures;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.Arrays;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The Java forward against the independent PyTorch reference outputs of qwen2-tiny. */
class DecoderForwardTest {
    static Checkpoint ckpt;
    static DecoderWeights weights;
    static SafetensorsFile ref;

    @BeforeAll
    static void load() {
        ckpt = Checkpoint.open(Fixtures.qwen2Tiny());
        weights = DecoderWeights.load(ckpt);
        ref = SafetensorsFile.open(Fixtures.reference("logits.safetensors"));
    }

    @AfterAll
    static void close() {
        ref.close();
        ckpt.close();
    }

    static int[] ids(String key) {
        long[] l = new long[(int) ref.info(key + ".input_ids").numel()];
        ref.bytes(key + ".input_ids").asLongBuffer().get(l);
        return Arrays.stream(l).mapToInt(v -> (int) v).toArray();
    }

    static float maxAbsDiff(float[][] got, float[] flatRef) {
        float max = 0;
        int w = got[0].length;
        for (int t = 0; t < got.length; t++) {
            for (int i = 0; i < w; i++) {
                max = Math.max(max, Math.abs(got[t][i] - flatRef[t * w + i]));
            }
        }
        return max;
    }

    @ParameterizedTest
    @ValueSource(strings = {"en", "zh", "chatml"})
    void logitsMatchReferenceWithBothKernels(String key) {
        int[] ids = ids(key);
        float[] expected = ref.floats(key + ".logits");
        for (Kernels<float[]> k : List.of(new FloatKernels(1), Kernels.float32(2))) {
            try (k) {
                float[][] got = new DecoderForward(weights, k).logits(ids);
                float diff = maxAbsDiff(got, expected);
                assertTrue(diff <= 1e-4f, k.name() + " " + key + ": max |dlogit| = " + diff);
            }
        }
    }

    @Test
    void hiddenStatesMatchLayerByLayer() {
        int[] ids = ids("en");
        float[][][] hs = new DecoderForward(weights).hiddenStates(ids);
        String[] names = {"hidden.embed", "hidden.layer0", "hidden.layer1", "hidden.layer2", "hidden.layer3", "final_norm_hidden"};
        for (int k = 0; k < names.length; k++) {
            float[] expected = ref.floats("en." + names[k]);
            float[][] got = new float[ids.length][];
            for (int t = 0; t < ids.length; t++) {
                got[t] = hs[t][k];
            }
            float diff = maxAbsDiff(got, expected);
            assertTrue(diff <= 1e-4f, names[k] + ": max diff " + diff);
        }
    }

    @Test
    void incrementalDecodingEqualsFullRecompute() {
        int[] ids = ids("zh");
        DecoderForward fwd = new DecoderForward(weights);
        float[][] full = fwd.logits(ids);
        KvCache cache = new KvCache(weights.config(), ids.length);
        fwd.forward(Arrays.copyOf(ids, 5), cache, false);
        float[][] rest = fwd.forward(Arrays.copyOfRange(ids, 5, ids.length), cache, true);
        for (int t = 5; t < ids.length; t++) {
            assertArrayEquals(full[t], rest[t - 5], 1e-5f);
        }
    }

    /**
     * Tokens run through the layers together (a prompt) give the token-by-token forward's logits bit for bit, with
     * both kernel providers, after a cached prefix, and with an unmerged adapter on some linears.
     */
    @Test
    void aPromptRunTogetherEqualsItTokenByTokenBitForBit() {
        int[] ids = ids("en");
        java.util.SplittableRandom rng = new java.util.SplittableRandom(3);
        DecoderWeights adapted = weights.withAdapters((l, lin) -> lin == dev.hexforge.checkpoint.TensorNames.Linear.V
                || lin == dev.hexforge.checkpoint.TensorNames.Linear.DOWN ? delta(rng, weights.layer(l).weight(lin).length,
                lin == dev.hexforge.checkpoint.TensorNames.Linear.V ? weights.config().kvSize() : weights.config().hiddenSize()) : null);
        for (DecoderWeights w : List.of(weights, adapted)) {
            for (Kernels<float[]> k : List.of(new FloatKernels(1), Kernels.float32(2))) {
                try (k) {
                    DecoderForward fwd = new DecoderForward(w, k);
                    KvCache oneByOne = new KvCache(w.config(), ids.length);
                    float[][] single = new float[ids.length][];
                    for (int t = 0; t < ids.length; t++) {
                        single[t] = fwd.forward(new int[]{ids[t]}, oneByOne, true)[0];
                    }
                    float[][] together = fwd.logits(ids);
                    KvCache cache = new KvCache(w.config(), ids.length);
                    fwd.forward(Arrays.copyOf(ids, 2), cache, false);
                    float[][] rest = fwd.forward(Arrays.copyOfRange(ids, 2, ids.length), cache, false);
                    for (int t = 0; t < ids.length; t++) {
                        assertArrayEquals(single[t], together[t], k.name() + " position " + t);
                    }
                    assertArrayEquals(single[ids.length - 1], rest[rest.length - 1], k.name() + " after a cached prefix");
                }
            }
        }
    }

    /**
     * A bf16 checkpoint's linears, embedding and head are held as their 16 bits (half of float32's memory) and give
     * the logits, bit for bit, of the same values held as float32: tied and untied, with both kernel providers.
     */
    @ParameterizedTest
    @ValueSource(booleans = {true, false})
    void aBf16CheckpointIsHeldAsBf16AndGivesItsFloat32ValuesLogits(boolean tied, @org.junit.jupiter.api.io.TempDir java.nio.file.Path tmp) {
        dev.hexforge.synth.SyntheticCheckpoint.write(new dev.hexforge.synth.SyntheticCheckpoint.Options(
                dev.hexforge.synth.Preset.TINY, dev.hexforge.checkpoint.Architecture.QWEN2, tied,
                dev.hexforge.safetensors.DType.BF16, 5), tmp, dev.hexforge.progress.Progress.NONE);
        try (Checkpoint c = Checkpoint.open(tmp)) {
            assertTrue(c.mapsBf16() && !ckpt.mapsBf16(), "the synthetic checkpoint is bf16, the fixture float32");
            DecoderWeights held = DecoderWeights.load(c);
            var cfg = held.config();
            assertEquals(2L * cfg.vocabSize() * cfg.hiddenSize(), held.embedMatrix().bytes());
            assertEquals(tied, held.lmHeadMatrix() == held.embedMatrix());
            assertEquals(2L * cfg.qSize() * cfg.hiddenSize(), held.layer(1).matrix(dev.hexforge.checkpoint.TensorNames.Linear.Q).bytes());
            java.util.Map<String, float[]> floats = new java.util.HashMap<>();
            floats.put(dev.hexforge.checkpoint.TensorNames.EMBED, held.embed());
            if (!tied) {
                floats.put(dev.hexforge.checkpoint.TensorNames.LM_HEAD, held.lmHead());
            }
            DecoderWeights widened = held.withLinears((l, lin) -> held.layer(l).weight(lin)).withReplacements(floats);
            assertEquals(4L * cfg.vocabSize() * cfg.hiddenSize(), widened.lmHeadMatrix().bytes());
            assertArrayEquals(c.floats(dev.hexforge.checkpoint.TensorNames.weight(1, dev.hexforge.checkpoint.TensorNames.Linear.DOWN)),
                    widened.layer(1).weight(dev.hexforge.checkpoint.TensorNames.Linear.DOWN));
            int[] ids = {1, 17, 300, 5, 1999, 42, 7, 8, 9, 10, 11};
            for (Kernels<float[]> k : List.of(new FloatKernels(1), Kernels.float32(2))) {
                try (k) {
                    float[][] a = new DecoderForward(held, k).logits(ids);
                    float[][] b = new DecoderForward(widened, k).logits(ids);
                    for (int t = 0; t < ids.length; t++) {
                        assertArrayEquals(b[t], a[t], k.name() + " position " + t);
                    }
                }
            }
        }
    }

    private static DecoderWeights.LowRankDelta delta(java.util.SplittableRandom rng, int values, int out) {
        int rank = 4;
        int in = values / out;
        float[] a = new float[rank * in];
        float[] b = new float[out * rank];
        for (int i = 0; i < a.length; i++) {
            a[i] = (float) rng.nextGaussian() * 0.05f;
        }
        for (int i = 0; i < b.length; i++) {
            b[i] = (float) rng.nextGaussian() * 0.05f;
        }
        return new DecoderWeights.LowRankDelta(a, b, rank, 2f);
    }

    @Test
    void greedyContinuationsMatchUpToTheNearTie() {
        JsonNode prompts = Fixtures.json(Fixtures.reference("reference.json")).path("prompts");
        DecoderForward fwd = new DecoderForward(weights);
        for (JsonNode p : prompts) {
            int[] input = Fixtures.ints(p.path("input_ids"));
            int[] expected = Fixtures.ints(p.path("greedy_new_ids"));
            int exact = p.path("greedy_exact_prefix_len").asInt();
            int[] got = Generator.generate(fwd, input, Generator.Options.greedy(expected.length), null);
            assertArrayEquals(Arrays.copyOf(expected, exact), Arrays.copyOf(got, exact), p.path("name").asText());
            JsonNode top10 = p.path("top10_last_prompt_position");
            float[] last = fwd.logits(input)[input.length - 1];
            for (JsonNode pair : top10) {
                assertEquals(pair.get(1).floatValue(), last[pair.get(0).asInt()], 1e-4f, p.path("name").asText());
            }
        }
    }

    @Test
    void perplexityOfEvalTxtMatchesReference() {
        JsonNode expected = Fixtures.json(Fixtures.reference("perplexity.json")).path("results").path("float32").path("eval.txt");
        Perplexity.Result r = Perplexity.evaluate(new DecoderForward(weights), Fixtures.evalTxtIds(), 128, null);
        assertEquals(expected.path("scored_tokens").asInt(), r.scoredTokens());
        assertEquals(expected.path("windows").asInt(), r.windows());
        double rel = Math.abs(r.perplexity() - expected.path("perplexity").asDouble()) / expected.path("perplexity").asDouble();
        assertTrue(rel < 1e-4, "perplexity " + r.perplexity() + " vs " + expected.path("perplexity").asDouble());
    }
}
