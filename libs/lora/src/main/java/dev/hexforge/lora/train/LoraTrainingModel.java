package dev.hexforge.lora.train;

import dev.hexforge.checkpoint.ModelConfig;
import dev.hexforge.checkpoint.TensorNames.Linear;
import dev.hexforge.forward.DecoderWeights;
import dev.hexforge.forward.Rope;
import dev.hexforge.kernels.FrozenMatrix;
import dev.hexforge.kernels.Kernels;

import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * Forward and hand-written backward of a Qwen2 / Llama / Qwen3 decoder with LoRA adapters, base weights (and
 * Qwen3's q/k norms) frozen. A batch is
 * packed into one token stream ([tokens, hidden] for every linear) with attention kept inside each sequence, so
 * no compute is spent on padding. The loss is the summed negative log-likelihood of the target tokens; logits are
 * computed only for the rows that predict a target, in chunks, which bounds memory for large vocabularies.
 *
 * <p>Per layer, the forward keeps what the backward needs: the layer input, both norm outputs with their inverse
 * RMS, q and k before Qwen3's per-head norms with their inverse RMS, post-RoPE q and k, v, the attention
 * probabilities, the attention output, gate and up, and for each adapter its (dropped-out) input and
 * {@code scale · A x}.
 */
public final class LoraTrainingModel<A> {
    /** Logit values computed at once: bounds memory for large vocabularies (64 MB of float32, 110 rows of Qwen's). */
    private static final int LOSS_CHUNK_VALUES = 1 << 24;

    private final Kernels<A> k;
    private final ModelConfig c;
    private final LoraParams<A> params;
    private final FrozenMatrix embed;
    private final FrozenMatrix lmHead;
    private final A lmHeadT; // [hidden, vocab] when within the budget, else null
    private final A finalNorm;
    private final FrozenLayer<A>[] layers;
    private final Rope rope;
    private final double attnScale;
    private final double dropout;

    private static final class FrozenLayer<A> {
        A inputNorm;
        A postNorm;
        A qNorm; // Qwen3's per-head norms [head_dim], null without them
        A kNorm;
        final Map<Linear, FrozenMatrix> w = new EnumMap<>(Linear.class);
        final Map<Linear, A> b = new EnumMap<>(Linear.class);
        /** wᵀ [in, out], kept when the model is small enough (see {@link #TRANSPOSED_BUDGET}); else empty. */
        final Map<Linear, A> wt = new EnumMap<>(Linear.class);
    }

    /**
     * Frozen values (all linears and the head) up to which a float32 transposed copy is kept for the forward, which
     * then runs as broadcast FMAs with no horizontal sums: 256 MB. Past it, the forward reads the frozen weight
     * itself (dot products over rows of w), which at a 0.5B model's sizes is as fast and takes no memory.
     */
    private static final long TRANSPOSED_BUDGET = 1L << 26;

    public LoraTrainingModel(Kernels<A> k, DecoderWeights weights, LoraParams<A> params) {
        this(k, weights, params, TRANSPOSED_BUDGET);
    }

    /** With the budget for transposed copies given: 0 makes a small model take the path of large ones (tests). */
    @SuppressWarnings("unchecked")
    LoraTrainingModel(Kernels<A> k, DecoderWeights weights, LoraParams<A> params, long transposedBudget) {
        this.k = k;
        this.c = weights.config();
        this.params = params;
        this.embed = weights.embedMatrix();
        this.lmHead = weights.lmHeadMatrix();
        this.finalNorm = k.of(weights.finalNorm());
        this.layers = new FrozenLayer[c.numLayers()];
        long frozenValues = (long) c.vocabSize() * c.hiddenSize();
        for (int l = 0; l < layers.length; l++) {
            for (Linear lin : Linear.values()) {
                frozenValues += weights.layer(l).matrix(lin).length();
            }
        }
        boolean keepTransposed = frozenValues <= transposedBudget;
        this.lmHeadT = keepTransposed ? k.transpose(k.of(lmHead.toFloats()), c.vocabSize(), c.hiddenSize()) : null;
        for (int l = 0; l < layers.length; l++) {
            DecoderWeights.Layer src = weights.layer(l);
            FrozenLayer<A> f = new FrozenLayer<>();
            f.inputNorm = k.of(src.inputNorm());
            f.postNorm = k.of(src.postAttentionNorm());
            if (src.headNorms() != null) {
                f.qNorm = k.of(src.headNorms().q());
                f.kNorm = k.of(src.headNorms().k());
            }
            for (Linear lin : Linear.values()) {
                int[] shape = LoraParams.shape(c, lin);
                f.w.put(lin, src.matrix(lin));
                if (keepTransposed) {
                    f.wt.put(lin, k.transpose(k.of(src.weight(lin)), shape[0], shape[1]));
                }
                if (src.bias(lin) != null) {
                    f.b.put(lin, k.of(src.bias(lin)));
                }
            }
            layers[l] = f;
        }
        this.rope = Rope.of(c, c.maxPositionEmbeddings());
        this.attnScale = 1.0 / Math.sqrt(c.headDim());
        this.dropout = params.config().dropout();
    }

    public ModelConfig config() {
        return c;
    }

    public LoraParams<A> params() {
        return params;
    }

    public Kernels<A> kernels() {
        return k;
    }

    /** The summed NLL and the number of target tokens of a batch. */
    public record Loss(double sum, int tokens) {
        public double mean() {
            return tokens == 0 ? 0 : sum / tokens;
        }
    }

    /** Loss without gradients or dropout (evaluation). */
    public Loss loss(List<TrainingExample> batch) {
        Pass p = new Pass(batch, false, 0);
        p.forward();
        return p.loss(0, false);
    }

    /**
     * Forward and backward: adds {@code gradScale · ∂(summed NLL)/∂θ} to the parameter gradients. Dropout masks
     * come from {@code dropoutSeed}, so a step can be replayed exactly.
     */
    public Loss forwardBackward(List<TrainingExample> batch, double gradScale, long dropoutSeed) {
        Pass p = new Pass(batch, true, dropoutSeed);
        p.forward();
        Loss loss = p.loss(gradScale, true);
        p.backward();
        return loss;
    }

    /** The training-mode loss (dropout from {@code dropoutSeed}) without gradients: for finite-difference checks. */
    public double forwardBackwardLossOnly(List<TrainingExample> batch, long dropoutSeed) {
        Pass p = new Pass(batch, true, dropoutSeed);
        p.forward();
        return p.loss(0, false).sum();
    }

    /** What one adapter keeps for its backward. */
    private final class AdapterCache {
        A input;   // the dropped-out input (or the input itself without dropout)
        A keep;    // the dropout multipliers (0 or 1/(1-p)), null without dropout
        A scaledU; // scale · (input · Aᵀ), [T, r]
    }

    private final class LayerCache {
        A xIn;
        A rstd1;
        A n1;
        A q;
        A kk;
        A v;
        A qRaw; // q and k before Qwen3's per-head norms, with each head's inverse RMS; null without them
        A kRaw;
        A qRstd;
        A kRstd;
        List<A> probs; // per sequence and head, [n, n]
        A attn;
        A xMid;
        A rstd2;
        A n2;
        A gate;
        A up;
        final Map<Linear, AdapterCache> adapters = new EnumMap<>(Linear.class);
    }

    /** One forward (and optional backward) over a packed batch. */
    private final class Pass {
        final int t;
        final int[] ids;
        final int[] positions;
        final int[] seqStart;
        final int[] seqLen;
        final boolean train;
        final long seed;
        final List<LayerCache> caches;
        final int[] lossRows;
        final int[] lossTargets;
        A xOut;
        A dFinal;

        Pass(List<TrainingExample> batch, boolean train, long seed) {
            this.train = train;
            this.seed = seed;
            int n = batch.size();
            seqStart = new int[n];
            seqLen = new int[n];
            int total = 0;
            int targets = 0;
            for (int s = 0; s < n; s++) {
                TrainingExample e = batch.get(s);
                if (e.tokens().length > c.maxPositionEmbeddings() + 1) {
                    throw new IllegalArgumentException("a sequence of " + e.tokens().length
                            + " tokens is longer than max_position_embeddings " + c.maxPositionEmbeddings());
                }
                seqStart[s] = total;
                seqLen[s] = e.inputLength();
                total += e.inputLength();
                targets += e.targetCount();
            }
            t = total;
            ids = new int[t];
            positions = new int[t];
            lossRows = new int[targets];
            lossTargets = new int[targets];
            int r = 0;
            for (int s = 0; s < n; s++) {
                TrainingExample e = batch.get(s);
                for (int p = 0; p < seqLen[s]; p++) {
                    int id = e.tokens()[p];
                    if (id < 0 || id >= c.vocabSize()) {
                        throw new IllegalArgumentException("token id " + id + " is outside the vocabulary (0.."
                                + (c.vocabSize() - 1) + ")");
                    }
                    ids[seqStart[s] + p] = id;
                    positions[seqStart[s] + p] = p;
                    if (e.target()[p + 1]) {
                        lossRows[r] = seqStart[s] + p;
                        lossTargets[r] = e.tokens()[p + 1];
                        r++;
                    }
                }
            }
            caches = new ArrayList<>(Collections.nCopies(c.numLayers(), null));
        }

        void forward() {
            int h = c.hiddenSize();
            A x = k.alloc(t * h);
            for (int i = 0; i < t; i++) {
                k.copyRow(embed, ids[i], x, i * h);
            }
            for (int l = 0; l < layers.length; l++) {
                x = layerForward(l, x);
            }
            xOut = x;
        }

        A layerForward(int l, A x) {
            FrozenLayer<A> f = layers[l];
            LayerCache lc = new LayerCache();
            if (train) {
                caches.set(l, lc);
            }
            int h = c.hiddenSize();
            int qs = c.qSize();
            int kvs = c.kvSize();
            int inter = c.intermediateSize();
            lc.xIn = x;
            lc.rstd1 = k.alloc(t);
            lc.n1 = k.alloc(t * h);
            rmsNormRows(x, f.inputNorm, lc.n1, lc.rstd1, t, h);
            lc.q = linear(l, Linear.Q, lc.n1, h, qs, lc);
            lc.kk = linear(l, Linear.K, lc.n1, h, kvs, lc);
            lc.v = linear(l, Linear.V, lc.n1, h, kvs, lc);
            if (f.qNorm != null) {
                lc.qRaw = lc.q;
                lc.kRaw = lc.kk;
                lc.qRstd = k.alloc(t * c.numHeads());
                lc.kRstd = k.alloc(t * c.numKvHeads());
                lc.q = headNorms(lc.qRaw, f.qNorm, lc.qRstd, c.numHeads());
                lc.kk = headNorms(lc.kRaw, f.kNorm, lc.kRstd, c.numKvHeads());
            }
            rope(lc.q, c.numHeads(), false);
            rope(lc.kk, c.numKvHeads(), false);
            lc.attn = k.alloc(t * qs);
            attention(lc);
            A o = linear(l, Linear.O, lc.attn, qs, h, lc);
            lc.xMid = k.copy(x);
            k.axpy(1, o, 0, lc.xMid, 0, t * h);
            lc.rstd2 = k.alloc(t);
            lc.n2 = k.alloc(t * h);
            rmsNormRows(lc.xMid, f.postNorm, lc.n2, lc.rstd2, t, h);
            lc.gate = linear(l, Linear.GATE, lc.n2, h, inter, lc);
            lc.up = linear(l, Linear.UP, lc.n2, h, inter, lc);
            A act = siluMul(lc.gate, lc.up);
            A down = linear(l, Linear.DOWN, act, inter, h, lc);
            AdapterCache downAdapter = lc.adapters.get(Linear.DOWN);
            if (downAdapter != null && downAdapter.keep == null) {
                downAdapter.input = null; // recomputed in the backward rather than kept
            }
            A out = k.copy(lc.xMid);
            k.axpy(1, down, 0, out, 0, t * h);
            return out;
        }

        A linear(int l, Linear lin, A in, int inDim, int outDim, LayerCache lc) {
            FrozenLayer<A> f = layers[l];
            A y = k.alloc(t * outDim);
            A wt = f.wt.get(lin);
            if (wt != null) {
                k.matmulNN(in, wt, y, t, inDim, outDim, false);
            } else {
                k.matmulNT(in, f.w.get(lin), y, t);
            }
            A bias = f.b.get(lin);
            if (bias != null) {
                for (int i = 0; i < t; i++) {
                    k.axpy(1, bias, 0, y, i * outDim, outDim);
                }
            }
            LoraParams.Module<A> m = params.module(l, lin);
            if (m != null) {
                int r = params.config().r();
                AdapterCache ac = new AdapterCache();
                ac.input = in;
                if (train && dropout > 0) {
                    ac.keep = k.alloc(t * inDim);
                    ac.input = k.alloc(t * inDim);
                    SplittableRandom rng = new SplittableRandom(seed ^ (0x9E3779B97F4A7C15L * (l * 8L + lin.ordinal() + 1)));
                    double kept = 1.0 / (1.0 - dropout);
                    int threshold = (int) Math.round(dropout * 65536); // four 16-bit draws per random long
                    long bits = 0;
                    for (int i = 0; i < t * inDim; i++) {
                        if ((i & 3) == 0) {
                            bits = rng.nextLong();
                        }
                        if ((int) (bits & 0xFFFF) >= threshold) {
                            k.set(ac.keep, i, kept);
                        }
                        bits >>>= 16;
                    }
                    k.multiply(in, 0, ac.keep, 0, ac.input, 0, t * inDim);
                }
                ac.scaledU = k.alloc(t * r);
                k.matmulNT(ac.input, m.a, ac.scaledU, t, inDim, r, false);
                double scale = params.config().scale();
                for (int i = 0; i < t * r; i++) {
                    k.set(ac.scaledU, i, k.get(ac.scaledU, i) * scale);
                }
                // y += (s·u) · Bᵀ, as rows: y[t, :] += Σ_j su[t, j] · B[:, j]
                A bt = k.transpose(m.b, outDim, r);
                k.matmulNN(ac.scaledU, bt, y, t, r, outDim, true);
                if (train) {
                    lc.adapters.put(lin, ac);
                }
            }
            return y;
        }

        /** Backward of one linear: returns nothing, adds {@code dy · W} (and the adapter's part) into {@code dIn}. */
        void linearBackward(int l, Linear lin, A dy, int inDim, int outDim, A dIn, LayerCache lc) {
            k.matmulNN(dy, layers[l].w.get(lin), dIn, t, true);
            LoraParams.Module<A> m = params.module(l, lin);
            if (m == null) {
                return;
            }
            int r = params.config().r();
            AdapterCache ac = lc.adapters.get(lin);
            // ∂L/∂B[o, j] = Σ_t dy[t, o] · su[t, j], accumulated as Bᵀ (long rows) and added transposed
            A gradBt = k.alloc(r * outDim);
            k.matmulTN(ac.scaledU, dy, gradBt, t, r, outDim);
            for (int o = 0; o < outDim; o++) {
                for (int j = 0; j < r; j++) {
                    k.add(m.gradB, o * r + j, k.get(gradBt, j * outDim + o));
                }
            }
            // ∂L/∂u = s · dy · B
            A du = k.alloc(t * r);
            k.matmulNT(dy, k.transpose(m.b, outDim, r), du, t, outDim, r, false);
            double scale = params.config().scale();
            for (int i = 0; i < t * r; i++) {
                k.set(du, i, k.get(du, i) * scale);
            }
            k.matmulTN(du, ac.input, m.gradA, t, r, inDim);
            if (ac.keep == null) {
                k.matmulNN(du, m.a, dIn, t, r, inDim, true);
            } else {
                A dx = k.alloc(t * inDim);
                k.matmulNN(du, m.a, dx, t, r, inDim, false);
                k.multiply(dx, 0, ac.keep, 0, dx, 0, t * inDim);
                k.axpy(1, dx, 0, dIn, 0, t * inDim);
            }
        }

        /** {@code dx += ∂norm/∂x · dy} for y = w ⊙ x · r, r = (mean(x²) + eps)^-½, for rows [0, rows). */
        void rmsNormBackward(A dy, A x, A w, A rstd, A dx, int h, int rows) {
            for (int row = 0; row < rows; row++) {
                k.rmsNormBackwardRow(dy, x, row * h, w, k.get(rstd, row), dx, h);
            }
        }


        /** Qwen3's RMSNorm over head_dim on every head of a [T, heads · d] tensor: a new tensor, each head's r kept. */
        A headNorms(A x, A w, A rstd, int heads) {
            int d = c.headDim();
            A out = k.alloc(t * heads * d);
            for (int i = 0; i < t * heads; i++) {
                k.set(rstd, i, k.rmsNormRow(x, i * d, w, out, d, c.rmsNormEps()));
            }
            return out;
        }

        /** The gradient of the input of {@link #headNorms} from that of its output (the norm weights are frozen). */
        A headNormsBackward(A dy, A x, A w, A rstd, int heads) {
            int d = c.headDim();
            A dx = k.alloc(t * heads * d);
            for (int i = 0; i < t * heads; i++) {
                k.rmsNormBackwardRow(dy, x, i * d, w, k.get(rstd, i), dx, d);
            }
            return dx;
        }

        void rope(A x, int heads, boolean inverse) {
            int d = c.headDim();
            int half = d / 2;
            float[] cos = rope.cos();
            float[] sin = rope.sin();
            int width = heads * d;
            for (int i = 0; i < t; i++) {
                int base = positions[i] * d;
                for (int hd = 0; hd < heads; hd++) {
                    int off = i * width + hd * d;
                    for (int j = 0; j < half; j++) {
                        double x1 = k.get(x, off + j);
                        double x2 = k.get(x, off + j + half);
                        double cs = cos[base + j];
                        double sn = inverse ? -sin[base + j] : sin[base + j];
                        k.set(x, off + j, x1 * cs - x2 * sn);
                        k.set(x, off + j + half, x2 * cs + x1 * sn);
                    }
                }
            }
        }

        /** Rows [start, start+n) of one head (columns [col, col+d)) of a [T, width] tensor, as a dense [n, d]. */
        A gather(A x, int start, int n, int width, int col, int d, A out) {
            for (int i = 0; i < n; i++) {
                k.copy(x, (start + i) * width + col, out, i * d, d);
            }
            return out;
        }

        int longestSequence() {
            int m = 0;
            for (int n : seqLen) {
                m = Math.max(m, n);
            }
            return m;
        }

        /** Adds a dense [n, d] block back into one head of a [T, width] tensor. */
        void scatterAdd(A block, A x, int start, int n, int width, int col, int d) {
            for (int i = 0; i < n; i++) {
                k.axpy(1, block, i * d, x, (start + i) * width + col, d);
            }
        }

        /** Per sequence and head: P = softmax(QKᵀ/√d + causal mask), O = P V, as dense products. */
        void attention(LayerCache lc) {
            int d = c.headDim();
            int heads = c.numHeads();
            int qs = c.qSize();
            int kvs = c.kvSize();
            int group = c.groupSize();
            lc.probs = new ArrayList<>(Collections.nCopies(seqLen.length * heads, null));
            int longest = longestSequence();
            k.forRows(seqLen.length * heads, (long) 64 * d * 64, (from, to) -> {
                A qh = k.alloc(longest * d); // scratch for the jobs of this worker
                A kh = k.alloc(longest * d);
                A vh = k.alloc(longest * d);
                A oh = k.alloc(longest * d);
                for (int job = from; job < to; job++) {
                    int s = job / heads;
                    int hd = job % heads;
                    int n = seqLen[s];
                    int start = seqStart[s];
                    int kvOff = (hd / group) * d;
                    gather(lc.q, start, n, qs, hd * d, d, qh);
                    gather(lc.kk, start, n, kvs, kvOff, d, kh);
                    gather(lc.v, start, n, kvs, kvOff, d, vh);
                    A p = k.alloc(n * n);
                    k.matmulNT(qh, kh, p, n, d, n, false);
                    for (int i = 0; i < n; i++) {
                        int row = i * n;
                        double max = k.max(p, row, i + 1) * attnScale;
                        double sum = k.expInPlace(p, row, i + 1, attnScale, max);
                        k.scale(p, row, i + 1, 1 / sum);
                        for (int j = i + 1; j < n; j++) {
                            k.set(p, row + j, 0);
                        }
                    }
                    k.matmulNNTriangular(p, vh, oh, n, d, true);
                    scatterAdd(oh, lc.attn, start, n, qs, hd * d, d);
                    lc.probs.set(job, p);
                }
            });
        }

        /**
         * dP = dO Vᵀ, dS = P ⊙ (dP − rowsum(dO ⊙ O)) / √d, dQ = dS K, dK = dSᵀ Q, dV = Pᵀ dO. Sequences touch disjoint
         * rows; heads of one KV group share dK / dV, so one worker takes all heads of a sequence.
         */
        void attentionBackward(LayerCache lc, A dAttn, A dq, A dk, A dv) {
            int d = c.headDim();
            int heads = c.numHeads();
            int qs = c.qSize();
            int kvs = c.kvSize();
            int group = c.groupSize();
            int longest = longestSequence();
            k.forRows(seqLen.length, (long) heads * 64 * d * 64, (from, to) -> {
                A dOh = k.alloc(longest * d); // scratch for the sequences of this worker
                A oh = k.alloc(longest * d);
                A qh = k.alloc(longest * d);
                A kh = k.alloc(longest * d);
                A vh = k.alloc(longest * d);
                A grad = k.alloc(longest * d);
                A ds = k.alloc(longest * longest);
                A transposed = k.alloc(longest * longest);
                for (int s = from; s < to; s++) {
                    int n = seqLen[s];
                    int start = seqStart[s];
                    for (int hd = 0; hd < heads; hd++) {
                        int kvOff = (hd / group) * d;
                        A p = lc.probs.get(s * heads + hd);
                        gather(dAttn, start, n, qs, hd * d, d, dOh);
                        gather(lc.attn, start, n, qs, hd * d, d, oh);
                        gather(lc.q, start, n, qs, hd * d, d, qh);
                        gather(lc.kk, start, n, kvs, kvOff, d, kh);
                        gather(lc.v, start, n, kvs, kvOff, d, vh);
                        k.matmulNT(dOh, vh, ds, n, d, n, false);
                        for (int i = 0; i < n; i++) {
                            k.softmaxBackwardRow(p, ds, i * n, i + 1, n, k.dot(dOh, i * d, oh, i * d, d), attnScale);
                        }
                        k.matmulNNTriangular(ds, kh, grad, n, d, true);
                        scatterAdd(grad, dq, start, n, qs, hd * d, d);
                        k.transposeInto(ds, n, n, transposed);
                        k.matmulNNTriangular(transposed, qh, grad, n, d, false);
                        scatterAdd(grad, dk, start, n, kvs, kvOff, d);
                        k.transposeInto(p, n, n, transposed);
                        k.matmulNNTriangular(transposed, dOh, grad, n, d, false);
                        scatterAdd(grad, dv, start, n, kvs, kvOff, d);
                    }
                }
            });
        }

        A siluMul(A gate, A up) {
            int n = t * c.intermediateSize();
            A out = k.alloc(n);
            k.siluMul(gate, up, out, n);
            return out;
        }

        Loss loss(double gradScale, boolean withGrad) {
            int h = c.hiddenSize();
            int vocab = c.vocabSize();
            double sum = 0;
            if (withGrad) {
                dFinal = k.alloc(t * h);
            }
            // chunks of equal size: the head is read once per chunk, and a short last chunk reads it for few rows
            int most = Math.max(1, LOSS_CHUNK_VALUES / vocab);
            int chunks = (lossRows.length + most - 1) / most;
            int chunk = chunks == 0 ? 1 : (lossRows.length + chunks - 1) / chunks;
            for (int from = 0; from < lossRows.length; from += chunk) {
                int n = Math.min(chunk, lossRows.length - from);
                A xs = k.alloc(n * h);
                A rstd = k.alloc(n);
                for (int i = 0; i < n; i++) {
                    k.copy(xOut, lossRows[from + i] * h, xs, i * h, h);
                }
                A normed = k.alloc(n * h);
                rmsNormRows(xs, finalNorm, normed, rstd, n, h);
                A logits = k.alloc(n * vocab);
                if (lmHeadT != null) {
                    k.matmulNN(normed, lmHeadT, logits, n, h, vocab, false);
                } else {
                    k.matmulNT(normed, lmHead, logits, n);
                }
                for (int i = 0; i < n; i++) {
                    int off = i * vocab;
                    double max = k.max(logits, off, vocab);
                    int target = lossTargets[from + i];
                    double targetLogit = k.get(logits, off + target);
                    double z = k.expInPlace(logits, off, vocab, 1, max);
                    sum += max + Math.log(z) - targetLogit;
                    if (withGrad) {
                        k.scale(logits, off, vocab, gradScale / z);
                        k.add(logits, off + target, -gradScale);
                    }
                }
                if (withGrad) {
                    A dNormed = k.alloc(n * h);
                    k.matmulNN(logits, lmHead, dNormed, n, false);
                    A dx = k.alloc(n * h);
                    rmsNormBackward(dNormed, xs, finalNorm, rstd, dx, h, n);
                    for (int i = 0; i < n; i++) {
                        k.axpy(1, dx, i * h, dFinal, lossRows[from + i] * h, h);
                    }
                }
            }
            return new Loss(sum, lossRows.length);
        }

        void rmsNormRows(A x, A w, A out, A rstd, int rows, int h) {
            for (int i = 0; i < rows; i++) {
                k.set(rstd, i, k.rmsNormRow(x, i * h, w, out, h, c.rmsNormEps()));
            }
        }

        void backward() {
            int h = c.hiddenSize();
            int qs = c.qSize();
            int kvs = c.kvSize();
            int inter = c.intermediateSize();
            A dx = dFinal;
            for (int l = layers.length - 1; l >= 0; l--) {
                FrozenLayer<A> f = layers[l];
                LayerCache lc = caches.get(l);
                // MLP: out = xMid + down(silu(gate) ⊙ up); the activation is recomputed only for a down adapter
                A dAct = k.alloc(t * inter);
                linearBackwardInto(l, Linear.DOWN, dx, inter, h, dAct, lc,
                        lc.adapters.containsKey(Linear.DOWN) ? siluMul(lc.gate, lc.up) : null);
                k.siluMulBackward(lc.gate, lc.up, dAct, t * inter); // gate and up become their gradients
                A dGate = lc.gate;
                A dUp = lc.up;
                A dN2 = k.alloc(t * h);
                linearBackward(l, Linear.GATE, dGate, h, inter, dN2, lc);
                linearBackward(l, Linear.UP, dUp, h, inter, dN2, lc);
                A dMid = k.copy(dx);
                rmsNormBackward(dN2, lc.xMid, f.postNorm, lc.rstd2, dMid, h, t);
                // attention: xMid = xIn + o_proj(attn(q, k, v))
                A dAttn = k.alloc(t * qs);
                linearBackward(l, Linear.O, dMid, qs, h, dAttn, lc);
                A dq = k.alloc(t * qs);
                A dk = k.alloc(t * kvs);
                A dv = k.alloc(t * kvs);
                attentionBackward(lc, dAttn, dq, dk, dv);
                rope(dq, c.numHeads(), true);
                rope(dk, c.numKvHeads(), true);
                if (f.qNorm != null) {
                    dq = headNormsBackward(dq, lc.qRaw, f.qNorm, lc.qRstd, c.numHeads());
                    dk = headNormsBackward(dk, lc.kRaw, f.kNorm, lc.kRstd, c.numKvHeads());
                }
                A dN1 = k.alloc(t * h);
                linearBackward(l, Linear.Q, dq, h, qs, dN1, lc);
                linearBackward(l, Linear.K, dk, h, kvs, dN1, lc);
                linearBackward(l, Linear.V, dv, h, kvs, dN1, lc);
                A dIn = dMid;
                rmsNormBackward(dN1, lc.xIn, f.inputNorm, lc.rstd1, dIn, h, t);
                dx = dIn;
                caches.set(l, null);
            }
        }

        /** As {@link #linearBackward}, for the down projection whose input (the activation) is recomputed. */
        void linearBackwardInto(int l, Linear lin, A dy, int inDim, int outDim, A dIn, LayerCache lc, A recomputedInput) {
            AdapterCache ac = lc.adapters.get(lin);
            if (ac != null && ac.keep == null) {
                ac.input = recomputedInput;
            }
            linearBackward(l, lin, dy, inDim, outDim, dIn, lc);
        }
    }
}
