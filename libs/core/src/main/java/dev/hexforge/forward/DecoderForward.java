package dev.hexforge.forward;

import dev.hexforge.checkpoint.ModelConfig;
import dev.hexforge.checkpoint.TensorNames.Linear;
import dev.hexforge.generate.CausalLm;
import dev.hexforge.generate.DecodeSession;
import dev.hexforge.kernels.FrozenMatrix;
import dev.hexforge.kernels.Kernels;

import java.util.Arrays;

/**
 * The reference forward of a Qwen2 / Llama / Qwen3 decoder in plain Java, following Hugging Face's float32 eager
 * path (RMSNorm, Qwen3's per-head q/k RMSNorm, RoPE with Llama 3's scaling, GQA attention with causal mask, SwiGLU
 * MLP, final norm, lm_head) with a KV cache: a prompt's tokens through each layer together, then one position at a
 * time. It is the oracle for exports, quantization and training.
 */
public final class DecoderForward implements CausalLm {
    private final DecoderWeights w;
    private final ModelConfig c;
    private final Kernels<float[]> k;
    private final Rope rope;
    private final float scale;

    public DecoderForward(DecoderWeights weights, Kernels<float[]> kernels) {
        this.w = weights;
        this.c = weights.config();
        this.k = kernels;
        this.rope = Rope.of(c, c.maxPositionEmbeddings());
        this.scale = (float) (1.0 / Math.sqrt(c.headDim()));
    }

    public DecoderForward(DecoderWeights weights) {
        this(weights, Kernels.sharedFloat32());
    }

    public ModelConfig config() {
        return c;
    }

    @Override
    public int vocabSize() {
        return c.vocabSize();
    }

    @Override
    public int maxContext() {
        return c.maxPositionEmbeddings();
    }

    @Override
    public DecodeSession start(int capacity) {
        KvCache cache = new KvCache(c, capacity);
        return new DecodeSession() {
            @Override
            public float[][] appendAll(int[] ids) {
                return forward(ids, cache, true);
            }

            @Override
            public float[] append(int[] ids) {
                float[][] r = forward(ids, cache, false);
                return r[r.length - 1];
            }

            @Override
            public int length() {
                return cache.length();
            }
        };
    }

    /** Logits for every position in a fresh context. */
    public float[][] logits(int[] ids) {
        return forward(ids, new KvCache(c, ids.length), true);
    }

    /**
     * Runs the tokens through the decoder, appending to the cache. Returns logits for every token when
     * {@code allLogits}, else an array whose last row holds the last token's logits (other rows null).
     */
    public float[][] forward(int[] ids, KvCache cache, boolean allLogits) {
        cache.checkRoom(ids.length);
        int n = ids.length;
        if (n == 0) {
            return new float[0][];
        }
        int h = c.hiddenSize();
        float[] x = layers(ids, cache, null);
        float[][] out = new float[n][];
        int vocab = c.vocabSize();
        FrozenMatrix head = w.lmHeadMatrix();
        int chunk = Math.min(n, HEAD_ROWS);
        float[] finalNormed = new float[chunk * h];
        float[] logits = new float[chunk * vocab];
        for (int from = allLogits ? 0 : n - 1; from < n; from += chunk) {
            int rows = Math.min(chunk, n - from);
            for (int t = 0; t < rows; t++) {
                rmsNorm(x, (from + t) * h, w.finalNorm(), finalNormed, t * h);
            }
            k.matmulNT(finalNormed, head, logits, rows);
            for (int t = 0; t < rows; t++) {
                out[from + t] = Arrays.copyOfRange(logits, t * vocab, (t + 1) * vocab);
            }
        }
        return out;
    }

    /**
     * The residual stream of each token after the embedding and after every layer, [1 + layers][hidden], then the
     * final-norm output; for layer-by-layer comparisons with a reference.
     */
    public float[][][] hiddenStates(int[] ids) {
        int h = c.hiddenSize();
        float[][][] out = new float[ids.length][c.numLayers() + 2][];
        float[] x = layers(ids, new KvCache(c, ids.length), out);
        for (int t = 0; t < ids.length; t++) {
            float[] normed = new float[h];
            rmsNorm(x, t * h, w.finalNorm(), normed, 0);
            out[t][c.numLayers() + 1] = normed;
        }
        return out;
    }

    /** Rows of logits computed at a time: the head is read once per chunk, the chunk's logits are a copy more. */
    private static final int HEAD_ROWS = 64;

    /**
     * The residual stream [n, hidden] of the tokens after every layer, their keys and values appended to the cache.
     * The tokens run through each layer together: every linear reads its weight once for all of them
     * ({@link Kernels#matmulNT(Object, FrozenMatrix, Object, int)}, whose outputs are matVec's dot products, so a
     * token's values do not depend on the others given with it); the rest runs row by row. With {@code trace},
     * token t's row after the embedding and after layer l go to {@code trace[t][0]} and {@code trace[t][l + 1]}.
     */
    private float[] layers(int[] ids, KvCache cache, float[][][] trace) {
        int n = ids.length;
        int h = c.hiddenSize();
        int qs = c.qSize();
        int kvs = c.kvSize();
        int inter = c.intermediateSize();
        int pos0 = cache.length();
        if (pos0 + n > rope.positions()) {
            throw new IllegalArgumentException("position " + (pos0 + n - 1) + " is past max_position_embeddings "
                    + rope.positions());
        }
        float[] x = new float[n * h];
        for (int t = 0; t < n; t++) {
            int token = ids[t];
            if (token < 0 || token >= c.vocabSize()) {
                throw new IllegalArgumentException("token id " + token + " is outside the vocabulary (0.." + (c.vocabSize() - 1) + ")");
            }
            k.copyRow(w.embedMatrix(), token, x, t * h);
        }
        traceRows(trace, 0, x);
        float[] normed = new float[n * h];
        float[] q = new float[n * qs];
        float[] keys = new float[n * kvs];
        float[] values = new float[n * kvs];
        float[] attn = new float[n * qs];
        float[] proj = new float[n * h];
        float[] gate = new float[n * inter];
        float[] up = new float[n * inter];
        Scratch s = new Scratch(c);
        for (int l = 0; l < c.numLayers(); l++) {
            DecoderWeights.Layer L = w.layer(l);
            rmsNormRows(x, L.inputNorm, normed, n);
            linear(L, Linear.Q, normed, q, n, qs, h);
            linear(L, Linear.K, normed, keys, n, kvs, h);
            linear(L, Linear.V, normed, values, n, kvs, h);
            if (L.headNorms != null) {
                RmsNorm.heads(q, n, c.numHeads(), c.headDim(), L.headNorms.q(), c.rmsNormEps());
                RmsNorm.heads(keys, n, c.numKvHeads(), c.headDim(), L.headNorms.k(), c.rmsNormEps());
            }
            for (int t = 0; t < n; t++) {
                for (int head = 0; head < c.numHeads(); head++) {
                    rope.apply(q, t * qs + head * c.headDim(), pos0 + t);
                }
                for (int head = 0; head < c.numKvHeads(); head++) {
                    rope.apply(keys, t * kvs + head * c.headDim(), pos0 + t);
                }
            }
            System.arraycopy(keys, 0, cache.keys(l), pos0 * kvs, n * kvs);
            System.arraycopy(values, 0, cache.values(l), pos0 * kvs, n * kvs);
            for (int t = 0; t < n; t++) {
                System.arraycopy(q, t * qs, s.q, 0, qs);
                attention(cache, l, pos0 + t, s);
                System.arraycopy(s.attn, 0, attn, t * qs, qs);
            }
            linear(L, Linear.O, attn, proj, n, h, qs);
            for (int i = 0; i < n * h; i++) {
                x[i] += proj[i];
            }
            rmsNormRows(x, L.postAttentionNorm, normed, n);
            linear(L, Linear.GATE, normed, gate, n, inter, h);
            linear(L, Linear.UP, normed, up, n, inter, h);
            for (int i = 0; i < n * inter; i++) {
                float g = gate[i];
                gate[i] = g / (1f + (float) Math.exp(-g)) * up[i];
            }
            linear(L, Linear.DOWN, gate, proj, n, h, inter);
            for (int i = 0; i < n * h; i++) {
                x[i] += proj[i];
            }
            traceRows(trace, l + 1, x);
        }
        for (int t = 0; t < n; t++) {
            cache.advance();
        }
        return x;
    }

    private void traceRows(float[][][] trace, int at, float[] x) {
        if (trace == null) {
            return;
        }
        int h = c.hiddenSize();
        for (int t = 0; t < trace.length; t++) {
            trace[t][at] = Arrays.copyOfRange(x, t * h, (t + 1) * h);
        }
    }

    private void rmsNormRows(float[] x, float[] weight, float[] out, int rows) {
        int h = c.hiddenSize();
        for (int t = 0; t < rows; t++) {
            rmsNorm(x, t * h, weight, out, t * h);
        }
    }

    /** One linear (with its bias and unmerged adapter) over n rows: [n, cols] in, [n, rows] out. */
    private void linear(DecoderWeights.Layer L, Linear which, float[] in, float[] out, int n, int rows, int cols) {
        k.matmulNT(in, L.matrix(which), out, n);
        float[] b = L.bias(which);
        DecoderWeights.LowRankDelta lora = L.adapter(which);
        for (int t = 0; t < n; t++) {
            int o = t * rows;
            if (b != null) {
                for (int i = 0; i < rows; i++) {
                    out[o + i] += b[i];
                }
            }
            if (lora != null) {
                float[] ax = new float[lora.rank()];
                k.matVec(lora.a(), lora.rank(), cols, in, t * cols, ax, 0);
                for (int i = 0; i < rows; i++) {
                    out[o + i] += lora.scale() * (float) k.dot(lora.b(), i * lora.rank(), ax, 0, lora.rank());
                }
            }
        }
    }

    /** What one token's attention works in. */
    private static final class Scratch {
        final float[] q;
        final float[] attn;
        float[] scores;

        Scratch(ModelConfig c) {
            q = new float[c.qSize()];
            attn = new float[c.qSize()];
            scores = new float[64];
        }
    }

    private void attention(KvCache cache, int layer, int pos, Scratch s) {
        int d = c.headDim();
        int kv = c.kvSize();
        int group = c.groupSize();
        int len = pos + 1;
        if (s.scores.length < len) {
            s.scores = new float[Math.max(len, s.scores.length * 2)];
        }
        float[] keys = cache.keys(layer);
        float[] values = cache.values(layer);
        Arrays.fill(s.attn, 0f);
        for (int head = 0; head < c.numHeads(); head++) {
            int kvOff = (head / group) * d;
            int qOff = head * d;
            float max = Float.NEGATIVE_INFINITY;
            for (int j = 0; j < len; j++) {
                float sc = (float) k.dot(s.q, qOff, keys, j * kv + kvOff, d) * scale;
                s.scores[j] = sc;
                max = Math.max(max, sc);
            }
            float sum = 0f;
            for (int j = 0; j < len; j++) {
                float e = (float) Math.exp(s.scores[j] - max);
                s.scores[j] = e;
                sum += e;
            }
            for (int j = 0; j < len; j++) {
                k.axpy(s.scores[j] / sum, values, j * kv + kvOff, s.attn, qOff, d);
            }
        }
    }

    /** One row of hidden size from {@code x[xOff]} into {@code out[outOff]}. */
    private void rmsNorm(float[] x, int xOff, float[] weight, float[] out, int outOff) {
        RmsNorm.row(x, xOff, weight, out, outOff, c.hiddenSize(), c.rmsNormEps());
    }
}
