package dev.hexforge.forward;

import dev.hexforge.checkpoint.ModelConfig;
import dev.hexforge.checkpoint.TensorNames.Linear;
import dev.hexforge.generate.CausalLm;
import dev.hexforge.generate.DecodeSession;
import dev.hexforge.kernels.FrozenMatrix;
import dev.hexforge.kernels.Kernels;

/**
 * The reference forward of a Qwen2 / Llama decoder in plain Java, following Hugging Face's float32 eager path
 * (RMSNorm, RoPE, GQA attention with causal mask, SwiGLU MLP, final norm, lm_head), one position at a time with a
 * KV cache. It is the oracle for exports, quantization and training.
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
        if (ids.length >= BATCHED_FROM) {
            return forwardRows(ids, cache, allLogits);
        }
        float[][] out = new float[ids.length][];
        Scratch s = new Scratch(c);
        for (int t = 0; t < ids.length; t++) {
            float[] x = hiddenAfterLayers(ids[t], cache, s, null);
            if (allLogits || t == ids.length - 1) {
                out[t] = head(x, s);
            }
        }
        return out;
    }

    /**
     * The residual stream of each token after the embedding and after every layer, [1 + layers][hidden], then the
     * final-norm output; for layer-by-layer comparisons with a reference.
     */
    public float[][][] hiddenStates(int[] ids) {
        KvCache cache = new KvCache(c, ids.length);
        Scratch s = new Scratch(c);
        float[][][] out = new float[ids.length][][];
        for (int t = 0; t < ids.length; t++) {
            float[][] trace = new float[c.numLayers() + 2][];
            float[] x = hiddenAfterLayers(ids[t], cache, s, trace);
            float[] normed = new float[c.hiddenSize()];
            rmsNorm(x, w.finalNorm(), normed);
            trace[c.numLayers() + 1] = normed;
            out[t] = trace;
        }
        return out;
    }

    /** Tokens from which a forward runs them through each layer together (a prompt) rather than one by one. */
    private static final int BATCHED_FROM = 4;
    /** Rows of logits computed at a time: the head is read once per chunk, the chunk's logits are a copy more. */
    private static final int HEAD_ROWS = 64;

    /**
     * {@link #forward} for several tokens at once: every linear reads its weight once for all of them
     * ({@link Kernels#matmulNT(Object, FrozenMatrix, Object, int)}, whose outputs are the matVec's dot products), and
     * everything else runs row by row in the one-token code, so each value is the one the token-by-token forward
     * gives, bit for bit.
     */
    private float[][] forwardRows(int[] ids, KvCache cache, boolean allLogits) {
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
            System.arraycopy(w.embed(), token * h, x, t * h, h);
        }
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
            linearRows(L, Linear.Q, normed, q, n, qs, h);
            linearRows(L, Linear.K, normed, keys, n, kvs, h);
            linearRows(L, Linear.V, normed, values, n, kvs, h);
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
            linearRows(L, Linear.O, attn, proj, n, h, qs);
            for (int i = 0; i < n * h; i++) {
                x[i] += proj[i];
            }
            rmsNormRows(x, L.postAttentionNorm, normed, n);
            linearRows(L, Linear.GATE, normed, gate, n, inter, h);
            linearRows(L, Linear.UP, normed, up, n, inter, h);
            for (int i = 0; i < n * inter; i++) {
                float g = gate[i];
                gate[i] = g / (1f + (float) Math.exp(-g)) * up[i];
            }
            linearRows(L, Linear.DOWN, gate, proj, n, h, inter);
            for (int i = 0; i < n * h; i++) {
                x[i] += proj[i];
            }
        }
        for (int t = 0; t < n; t++) {
            cache.advance();
        }
        float[][] out = new float[n][];
        int vocab = c.vocabSize();
        FrozenMatrix head = new FrozenMatrix(w.lmHead(), vocab, h);
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
                out[from + t] = java.util.Arrays.copyOfRange(logits, t * vocab, (t + 1) * vocab);
            }
        }
        return out;
    }

    private void rmsNormRows(float[] x, float[] weight, float[] out, int rows) {
        int h = c.hiddenSize();
        for (int t = 0; t < rows; t++) {
            rmsNorm(x, t * h, weight, out, t * h);
        }
    }

    /** {@link #linear} for n rows: [n, cols] in, [n, rows] out. */
    private void linearRows(DecoderWeights.Layer L, Linear which, float[] in, float[] out, int n, int rows, int cols) {
        k.matmulNT(in, new FrozenMatrix(L.weight(which), rows, cols), out, n);
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

    private static final class Scratch {
        final float[] normed;
        final float[] q;
        final float[] k;
        final float[] v;
        final float[] attn;
        final float[] proj;
        final float[] gate;
        final float[] up;
        float[] scores;

        Scratch(ModelConfig c) {
            normed = new float[c.hiddenSize()];
            q = new float[c.qSize()];
            k = new float[c.kvSize()];
            v = new float[c.kvSize()];
            attn = new float[c.qSize()];
            proj = new float[c.hiddenSize()];
            gate = new float[c.intermediateSize()];
            up = new float[c.intermediateSize()];
            scores = new float[64];
        }
    }

    private float[] hiddenAfterLayers(int token, KvCache cache, Scratch s, float[][] trace) {
        if (token < 0 || token >= c.vocabSize()) {
            throw new IllegalArgumentException("token id " + token + " is outside the vocabulary (0.." + (c.vocabSize() - 1) + ")");
        }
        int h = c.hiddenSize();
        int pos = cache.length();
        if (pos >= rope.positions()) {
            throw new IllegalArgumentException("position " + pos + " is past max_position_embeddings " + rope.positions());
        }
        float[] x = new float[h];
        System.arraycopy(w.embed(), token * h, x, 0, h);
        if (trace != null) {
            trace[0] = x.clone();
        }
        for (int l = 0; l < c.numLayers(); l++) {
            DecoderWeights.Layer L = w.layer(l);
            rmsNorm(x, L.inputNorm, s.normed);
            linear(L, Linear.Q, s.normed, s.q, c.qSize(), h);
            linear(L, Linear.K, s.normed, s.k, c.kvSize(), h);
            linear(L, Linear.V, s.normed, s.v, c.kvSize(), h);
            for (int head = 0; head < c.numHeads(); head++) {
                rope.apply(s.q, head * c.headDim(), pos);
            }
            for (int head = 0; head < c.numKvHeads(); head++) {
                rope.apply(s.k, head * c.headDim(), pos);
            }
            System.arraycopy(s.k, 0, cache.keys(l), pos * c.kvSize(), c.kvSize());
            System.arraycopy(s.v, 0, cache.values(l), pos * c.kvSize(), c.kvSize());
            attention(cache, l, pos, s);
            linear(L, Linear.O, s.attn, s.proj, h, c.qSize());
            for (int i = 0; i < h; i++) {
                x[i] += s.proj[i];
            }
            rmsNorm(x, L.postAttentionNorm, s.normed);
            int inter = c.intermediateSize();
            linear(L, Linear.GATE, s.normed, s.gate, inter, h);
            linear(L, Linear.UP, s.normed, s.up, inter, h);
            for (int i = 0; i < inter; i++) {
                float g = s.gate[i];
                s.gate[i] = g / (1f + (float) Math.exp(-g)) * s.up[i];
            }
            linear(L, Linear.DOWN, s.gate, s.proj, h, inter);
            for (int i = 0; i < h; i++) {
                x[i] += s.proj[i];
            }
            if (trace != null) {
                trace[l + 1] = x.clone();
            }
        }
        cache.advance();
        return x;
    }

    private float[] head(float[] x, Scratch s) {
        rmsNorm(x, w.finalNorm(), s.normed);
        float[] logits = new float[c.vocabSize()];
        k.matVec(w.lmHead(), c.vocabSize(), c.hiddenSize(), s.normed, 0, logits, 0);
        return logits;
    }

    private void linear(DecoderWeights.Layer L, Linear which, float[] in, float[] out, int rows, int cols) {
        k.matVec(L.weight(which), rows, cols, in, 0, out, 0);
        float[] b = L.bias(which);
        if (b != null) {
            for (int i = 0; i < rows; i++) {
                out[i] += b[i];
            }
        }
        DecoderWeights.LowRankDelta lora = L.adapter(which);
        if (lora != null) {
            float[] ax = new float[lora.rank()];
            k.matVec(lora.a(), lora.rank(), cols, in, 0, ax, 0);
            for (int i = 0; i < rows; i++) {
                out[i] += lora.scale() * (float) k.dot(lora.b(), i * lora.rank(), ax, 0, lora.rank());
            }
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
        java.util.Arrays.fill(s.attn, 0f);
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

    private void rmsNorm(float[] x, float[] weight, float[] out) {
        rmsNorm(x, 0, weight, out, 0);
    }

    /** One row of hidden size from {@code x[xOff]} into {@code out[outOff]}. */
    private void rmsNorm(float[] x, int xOff, float[] weight, float[] out, int outOff) {
        int n = c.hiddenSize();
        double ss = 0;
        for (int i = 0; i < n; i++) {
            float v = x[xOff + i];
            ss += (double) v * v;
        }
        float variance = (float) (ss / n);
        float inv = (float) (1.0 / Math.sqrt(variance + (float) c.rmsNormEps()));
        for (int i = 0; i < n; i++) {
            out[outOff + i] = weight[i] * (x[xOff + i] * inv);
        }
    }
}
