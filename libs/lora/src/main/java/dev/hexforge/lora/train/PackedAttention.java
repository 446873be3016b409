package dev.hexforge.lora.train;

import dev.hexforge.checkpoint.ModelConfig;
import dev.hexforge.forward.Rope;
import dev.hexforge.kernels.Kernels;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * Attention over a packed batch of sequences for LoRA training, forward and backward: RoPE, Qwen3's per-head norms,
 * and per sequence and head the causal softmax attention as dense products. Rows of the [T, width] tensors are the
 * batch's tokens, sequence after sequence ({@code seqStart}, {@code seqLen}), each at its own {@code positions}.
 */
final class PackedAttention<A> {
    private final Kernels<A> k;
    private final ModelConfig c;
    private final Rope rope;
    private final double attnScale;
    private final int t;
    private final int[] positions;
    private final int[] seqStart;
    private final int[] seqLen;

    PackedAttention(Kernels<A> k, ModelConfig c, Rope rope, int[] positions, int[] seqStart, int[] seqLen) {
        this.k = k;
        this.c = c;
        this.rope = rope;
        this.attnScale = 1.0 / Math.sqrt(c.headDim());
        this.t = positions.length;
        this.positions = positions;
        this.seqStart = seqStart;
        this.seqLen = seqLen;
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
    private A gather(A x, int start, int n, int width, int col, int d, A out) {
        for (int i = 0; i < n; i++) {
            k.copy(x, (start + i) * width + col, out, i * d, d);
        }
        return out;
    }

    private int longestSequence() {
        int m = 0;
        for (int n : seqLen) {
            m = Math.max(m, n);
        }
        return m;
    }

    /** Adds a dense [n, d] block back into one head of a [T, width] tensor. */
    private void scatterAdd(A block, A x, int start, int n, int width, int col, int d) {
        for (int i = 0; i < n; i++) {
            k.axpy(1, block, i * d, x, (start + i) * width + col, d);
        }
    }

    /**
     * Per sequence and head: P = softmax(QKᵀ/√d + causal mask), O = P V, as dense products; O added into {@code attn}
     * [T, q_size]. Returns each sequence's and head's P for the backward.
     */
    List<A> forward(A q, A kk, A v, A attn) {
        int d = c.headDim();
        int heads = c.numHeads();
        int qs = c.qSize();
        int kvs = c.kvSize();
        int group = c.groupSize();
        List<A> probs = new ArrayList<>(Collections.nCopies(seqLen.length * heads, null));
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
                gather(q, start, n, qs, hd * d, d, qh);
                gather(kk, start, n, kvs, kvOff, d, kh);
                gather(v, start, n, kvs, kvOff, d, vh);
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
                scatterAdd(oh, attn, start, n, qs, hd * d, d);
                probs.set(job, p);
            }
        });
        return probs;
    }

    /**
     * dP = dO Vᵀ, dS = P ⊙ (dP − rowsum(dO ⊙ O)) / √d, dQ = dS K, dK = dSᵀ Q, dV = Pᵀ dO. Sequences touch disjoint
     * rows; heads of one KV group share dK / dV, so one worker takes all heads of a sequence.
     */
    void backward(List<A> probs, A q, A kk, A v, A attn, A dAttn, A dq, A dk, A dv) {
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
                    A p = probs.get(s * heads + hd);
                    gather(dAttn, start, n, qs, hd * d, d, dOh);
                    gather(attn, start, n, qs, hd * d, d, oh);
                    gather(q, start, n, qs, hd * d, d, qh);
                    gather(kk, start, n, kvs, kvOff, d, kh);
                    gather(v, start, n, kvs, kvOff, d, vh);
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
}
