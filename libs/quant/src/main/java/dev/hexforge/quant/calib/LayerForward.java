package dev.hexforge.quant.calib;

import dev.hexforge.checkpoint.ModelConfig;
import dev.hexforge.checkpoint.TensorNames.Linear;
import dev.hexforge.forward.RmsNorm;
import dev.hexforge.forward.Rope;
import dev.hexforge.kernels.Kernels;

import java.util.Arrays;

/**
 * One decoder layer over whole sequences (no cache), exposing the input of every linear: what calibration-based
 * quantizers need. Same math as the reference forward.
 */
public final class LayerForward {
    private final ModelConfig c;
    private final Rope rope;

    /** Inputs of the layer's linears and its output for one sequence of {@code length} tokens, row-major. */
    public record Trace(int length, float[] normed1, float[] attnContext, float[] normed2, float[] mlpHidden, float[] output) {
        /** The input rows of a linear: [length, in]. */
        public float[] inputOf(Linear l) {
            return switch (l) {
                case Q, K, V -> normed1;
                case O -> attnContext;
                case GATE, UP -> normed2;
                case DOWN -> mlpHidden;
            };
        }
    }

    public LayerForward(ModelConfig c) {
        this.c = c;
        this.rope = Rope.of(c, c.maxPositionEmbeddings());
    }

    public ModelConfig config() {
        return c;
    }

    /** [rows, out] = x [rows, in] · Wᵀ (+ b). */
    public float[] linear(float[] x, int rows, float[] w, float[] b, int out, int in) {
        float[] y = new float[rows * out];
        Kernels.sharedFloat32().matmulNT(x, w, y, rows, in, out, false);
        for (int r = 0; r < rows; r++) {
            if (b != null) {
                for (int o = 0; o < out; o++) {
                    y[r * out + o] += b[o];
                }
            }
        }
        return y;
    }

    public float[] rmsNorm(float[] x, int rows, float[] weight) {
        int h = weight.length;
        float[] out = new float[x.length];
        for (int r = 0; r < rows; r++) {
            RmsNorm.row(x, r * h, weight, out, r * h, h, c.rmsNormEps());
        }
        return out;
    }

    /** Causal GQA attention from projected q [L, qSize], k, v [L, kvSize] (before RoPE); returns the context [L, qSize]. */
    public float[] attention(float[] q, float[] k, float[] v, int len) {
        int d = c.headDim();
        int qs = c.qSize();
        int kvs = c.kvSize();
        q = q.clone();
        k = k.clone();
        for (int t = 0; t < len; t++) {
            for (int h = 0; h < c.numHeads(); h++) {
                rope.apply(q, t * qs + h * d, t);
            }
            for (int h = 0; h < c.numKvHeads(); h++) {
                rope.apply(k, t * kvs + h * d, t);
            }
        }
        float scale = (float) (1.0 / Math.sqrt(d));
        float[] ctx = new float[len * qs];
        float[] scores = new float[len];
        Kernels<float[]> kernels = Kernels.sharedFloat32();
        for (int t = 0; t < len; t++) {
            for (int h = 0; h < c.numHeads(); h++) {
                int kvOff = (h / c.groupSize()) * d;
                float max = Float.NEGATIVE_INFINITY;
                for (int j = 0; j <= t; j++) {
                    scores[j] = (float) kernels.dot(q, t * qs + h * d, k, j * kvs + kvOff, d) * scale;
                    max = Math.max(max, scores[j]);
                }
                float sum = 0;
                for (int j = 0; j <= t; j++) {
                    scores[j] = (float) Math.exp(scores[j] - max);
                    sum += scores[j];
                }
                for (int j = 0; j <= t; j++) {
                    kernels.axpy(scores[j] / sum, v, j * kvs + kvOff, ctx, t * qs + h * d, d);
                }
            }
        }
        return ctx;
    }

    /**
     * The attention context of the layer {@code p} from its fresh projections q, k, v (changed in place by Qwen3's
     * per-head norms, when the layer has them) over {@code rows / len} sequences of {@code len} tokens.
     */
    public float[] attend(LayerParams p, float[] q, float[] k, float[] v, int rows, int len) {
        if (p.qNorm != null) {
            RmsNorm.heads(q, rows, c.numHeads(), c.headDim(), p.qNorm, c.rmsNormEps());
            RmsNorm.heads(k, rows, c.numKvHeads(), c.headDim(), p.kNorm, c.rmsNormEps());
        }
        return attentionPerSequence(q, k, v, rows, len);
    }

    /** {@link #attention} over {@code rows / len} sequences of {@code len} tokens stacked in q, k and v, on every core. */
    public float[] attentionPerSequence(float[] q, float[] k, float[] v, int rows, int len) {
        if (rows == len) {
            return attention(q, k, v, len);
        }
        int qs = c.qSize();
        int kvs = c.kvSize();
        float[] ctx = new float[rows * qs];
        Kernels.sharedFloat32().forRows(rows / len, (long) len * len * qs, (from, to) -> {
            for (int r = from * len; r < to * len; r += len) {
                float[] part = attention(Arrays.copyOfRange(q, r * qs, (r + len) * qs),
                        Arrays.copyOfRange(k, r * kvs, (r + len) * kvs), Arrays.copyOfRange(v, r * kvs, (r + len) * kvs), len);
                System.arraycopy(part, 0, ctx, r * qs, part.length);
            }
        });
        return ctx;
    }

    /** {@code silu(gate) * up}, element by element, on every core. */
    public float[] swiglu(float[] gate, float[] up) {
        float[] out = new float[gate.length];
        int piece = 4096;
        Kernels.sharedFloat32().forRows((gate.length + piece - 1) / piece, 4L * piece, (from, to) -> {
            for (int i = from * piece; i < Math.min(gate.length, to * piece); i++) {
                float g = gate[i];
                out[i] = g / (1f + (float) Math.exp(-g)) * up[i];
            }
        });
        return out;
    }

    /**
     * The layer over hidden states x, run a part at a time: each part runs when the input of a later linear is first
     * asked for, on the weights as they are then (GPTQ quantizes a subset, then asks for the next one's input).
     * The same operations as {@link #run(LayerParams, float[], int, Linear)} from scratch each time, without the
     * recomputation; what no later part needs is dropped.
     */
    public final class Steps {
        private final LayerParams p;
        private final int len;
        private final int rows;
        private float[] x;
        private float[] n1;
        private float[] ctx;
        private float[] x2;
        private float[] n2;
        private float[] act;
        private int done; // 0: nothing, 1: n1, 2: ctx, 3: x2 and n2, 4: act

        public Steps(LayerParams p, float[] x, int len) {
            this.p = p;
            this.x = x;
            this.len = len;
            this.rows = x.length / c.hiddenSize();
        }

        /** The input rows of {@code l} [rows, in]; parts before it run now if they have not. */
        public float[] inputOf(Linear l) {
            int need = switch (l) {
                case Q, K, V -> 1;
                case O -> 2;
                case GATE, UP -> 3;
                case DOWN -> 4;
            };
            advanceTo(need);
            return switch (l) {
                case Q, K, V -> n1;
                case O -> ctx;
                case GATE, UP -> n2;
                case DOWN -> act;
            };
        }

        /** The layer's output; the last part runs now. */
        public float[] output() {
            advanceTo(4);
            float[] down = linear(act, rows, p.weights.get(Linear.DOWN), null, c.hiddenSize(), c.intermediateSize());
            float[] out = x2;
            for (int i = 0; i < out.length; i++) {
                out[i] += down[i];
            }
            return out;
        }

        private void advanceTo(int step) {
            int h = c.hiddenSize();
            if (done < 1 && step >= 1) {
                n1 = rmsNorm(x, rows, p.inputNorm);
                done = 1;
            }
            if (done < 2 && step >= 2) {
                float[] q = linear(n1, rows, p.weights.get(Linear.Q), p.biases.get(Linear.Q), c.qSize(), h);
                float[] k = linear(n1, rows, p.weights.get(Linear.K), p.biases.get(Linear.K), c.kvSize(), h);
                float[] v = linear(n1, rows, p.weights.get(Linear.V), p.biases.get(Linear.V), c.kvSize(), h);
                ctx = attend(p, q, k, v, rows, len);
                n1 = null;
                done = 2;
            }
            if (done < 3 && step >= 3) {
                float[] o = linear(ctx, rows, p.weights.get(Linear.O), null, h, c.qSize());
                x2 = new float[x.length];
                for (int i = 0; i < x.length; i++) {
                    x2[i] = x[i] + o[i];
                }
                n2 = rmsNorm(x2, rows, p.postAttentionNorm);
                ctx = null;
                x = null;
                done = 3;
            }
            if (done < 4 && step >= 4) {
                int inter = c.intermediateSize();
                act = swiglu(linear(n2, rows, p.weights.get(Linear.GATE), null, inter, h),
                        linear(n2, rows, p.weights.get(Linear.UP), null, inter, h));
                n2 = null;
                done = 4;
            }
        }
    }

    /** Runs the layer on hidden states x [len, hidden]. */
    public Trace run(LayerParams p, float[] x, int len) {
        return run(p, x, len, null);
    }

    /**
     * Runs the layer only as far as the input of {@code upTo} (the whole layer when null); later fields of the
     * trace are null. {@code x} may hold several sequences of {@code len} tokens one after the other: the linears
     * then run over all their rows at once, attention within each sequence.
     */
    public Trace run(LayerParams p, float[] x, int len, Linear upTo) {
        int h = c.hiddenSize();
        int rows = x.length / h;
        float[] n1 = rmsNorm(x, rows, p.inputNorm);
        if (upTo == Linear.Q || upTo == Linear.K || upTo == Linear.V) {
            return new Trace(len, n1, null, null, null, null);
        }
        float[] q = linear(n1, rows, p.weights.get(Linear.Q), p.biases.get(Linear.Q), c.qSize(), h);
        float[] k = linear(n1, rows, p.weights.get(Linear.K), p.biases.get(Linear.K), c.kvSize(), h);
        float[] v = linear(n1, rows, p.weights.get(Linear.V), p.biases.get(Linear.V), c.kvSize(), h);
        float[] ctx = attend(p, q, k, v, rows, len);
        if (upTo == Linear.O) {
            return new Trace(len, n1, ctx, null, null, null);
        }
        float[] o = linear(ctx, rows, p.weights.get(Linear.O), null, h, c.qSize());
        float[] x2 = new float[x.length];
        for (int i = 0; i < x.length; i++) {
            x2[i] = x[i] + o[i];
        }
        float[] n2 = rmsNorm(x2, rows, p.postAttentionNorm);
        if (upTo == Linear.GATE || upTo == Linear.UP) {
            return new Trace(len, n1, ctx, n2, null, null);
        }
        int inter = c.intermediateSize();
        float[] act = swiglu(linear(n2, rows, p.weights.get(Linear.GATE), null, inter, h),
                linear(n2, rows, p.weights.get(Linear.UP), null, inter, h));
        if (upTo == Linear.DOWN) {
            return new Trace(len, n1, ctx, n2, act, null);
        }
        float[] down = linear(act, rows, p.weights.get(Linear.DOWN), null, h, inter);
        for (int i = 0; i < x2.length; i++) {
            x2[i] += down[i];
        }
        return new Trace(len, n1, ctx, n2, act, x2);
    }

    /** Embeddings of a token sequence: the input of layer 0. */
    public static float[] embed(float[] table, int hidden, int[] ids) {
        float[] x = new float[ids.length * hidden];
        for (int t = 0; t < ids.length; t++) {
            System.arraycopy(table, ids[t] * hidden, x, t * hidden, hidden);
        }
        return x;
    }
}
