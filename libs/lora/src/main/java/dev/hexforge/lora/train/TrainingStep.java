package dev.hexforge.lora.train;

import dev.hexforge.checkpoint.ModelConfig;
import dev.hexforge.checkpoint.TensorNames.Linear;
import dev.hexforge.kernels.FrozenMatrix;
import dev.hexforge.kernels.Kernels;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.SplittableRandom;

/**
 * One forward (and optional backward) of {@link LoraTrainingModel} over a packed batch: the token stream, each
 * layer's forward keeping what its backward needs, the loss over the target rows in chunks, and the backward adding
 * into the adapters' gradients.
 */
final class TrainingStep<A> {
    private final Kernels<A> k;
    private final ModelConfig c;
    private final LoraParams<A> params;
    private final FrozenMatrix embed;
    private final FrozenMatrix lmHead;
    private final A lmHeadT;
    private final A finalNorm;
    private final LoraTrainingModel.FrozenLayer<A>[] layers;
    private final double dropout;

    final int t;
    final int[] ids;
    final int[] positions;
    final int[] seqStart;
    final int[] seqLen;
    final boolean train;
    final long seed;
    final List<LayerCache<A>> caches;
    final int[] lossRows;
    final int[] lossTargets;
    final PackedAttention<A> attention;
    A xOut;
    A dFinal;

    TrainingStep(LoraTrainingModel<A> model, List<TrainingExample> batch, boolean train, long seed) {
    this.k = model.k;
    this.c = model.c;
    this.params = model.params;
    this.embed = model.embed;
    this.lmHead = model.lmHead;
    this.lmHeadT = model.lmHeadT;
    this.finalNorm = model.finalNorm;
    this.layers = model.layers;
    this.dropout = model.dropout;
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
        attention = new PackedAttention<>(k, c, model.rope, positions, seqStart, seqLen);
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
        LoraTrainingModel.FrozenLayer<A> f = layers[l];
        LayerCache<A> lc = new LayerCache<>();
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
            lc.q = attention.headNorms(lc.qRaw, f.qNorm, lc.qRstd, c.numHeads());
            lc.kk = attention.headNorms(lc.kRaw, f.kNorm, lc.kRstd, c.numKvHeads());
        }
        attention.rope(lc.q, c.numHeads(), false);
        attention.rope(lc.kk, c.numKvHeads(), false);
        lc.attn = k.alloc(t * qs);
        lc.probs = attention.forward(lc.q, lc.kk, lc.v, lc.attn);
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
        LayerCache.Adapter<A> downAdapter = lc.adapters.get(Linear.DOWN);
        if (downAdapter != null && downAdapter.keep == null) {
            downAdapter.input = null; // recomputed in the backward rather than kept
        }
        A out = k.copy(lc.xMid);
        k.axpy(1, down, 0, out, 0, t * h);
        return out;
    }

    A linear(int l, Linear lin, A in, int inDim, int outDim, LayerCache<A> lc) {
        LoraTrainingModel.FrozenLayer<A> f = layers[l];
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
            LayerCache.Adapter<A> ac = new LayerCache.Adapter<>();
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
    void linearBackward(int l, Linear lin, A dy, int inDim, int outDim, A dIn, LayerCache<A> lc) {
        k.matmulNN(dy, layers[l].w.get(lin), dIn, t, true);
        LoraParams.Module<A> m = params.module(l, lin);
        if (m == null) {
            return;
        }
        int r = params.config().r();
        LayerCache.Adapter<A> ac = lc.adapters.get(lin);
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


    A siluMul(A gate, A up) {
        int n = t * c.intermediateSize();
        A out = k.alloc(n);
        k.siluMul(gate, up, out, n);
        return out;
    }

    LoraTrainingModel.Loss loss(double gradScale, boolean withGrad) {
        int h = c.hiddenSize();
        int vocab = c.vocabSize();
        double sum = 0;
        if (withGrad) {
            dFinal = k.alloc(t * h);
        }
        // chunks of equal size: the head is read once per chunk, and a short last chunk reads it for few rows
        int most = Math.max(1, LoraTrainingModel.LOSS_CHUNK_VALUES / vocab);
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
        return new LoraTrainingModel.Loss(sum, lossRows.length);
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
            LoraTrainingModel.FrozenLayer<A> f = layers[l];
            LayerCache<A> lc = caches.get(l);
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
            attention.backward(lc.probs, lc.q, lc.kk, lc.v, lc.attn, dAttn, dq, dk, dv);
            attention.rope(dq, c.numHeads(), true);
            attention.rope(dk, c.numKvHeads(), true);
            if (f.qNorm != null) {
                dq = attention.headNormsBackward(dq, lc.qRaw, f.qNorm, lc.qRstd, c.numHeads());
                dk = attention.headNormsBackward(dk, lc.kRaw, f.kNorm, lc.kRstd, c.numKvHeads());
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
    void linearBackwardInto(int l, Linear lin, A dy, int inDim, int outDim, A dIn, LayerCache<A> lc, A recomputedInput) {
        LayerCache.Adapter<A> ac = lc.adapters.get(lin);
        if (ac != null && ac.keep == null) {
            ac.input = recomputedInput;
        }
        linearBackward(l, lin, dy, inDim, outDim, dIn, lc);
    }
}
