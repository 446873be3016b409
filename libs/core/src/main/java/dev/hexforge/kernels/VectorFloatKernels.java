package dev.hexforge.kernels;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

import java.util.Arrays;

/**
 * Float32 training kernels on jdk.incubator.vector. {@code x·wᵀ} runs in 2×4 register tiles of dot products;
 * {@code dy·w} in 4-row × 4-vector tiles of broadcast FMAs, so no horizontal sums are needed there. This class splits
 * the products over the cores and blocks; the element-wise kernels are {@link VectorRowOps}, the register tiles
 * {@link VectorTiles}, and the products with a frozen (possibly bf16) weight {@link FrozenProducts}.
 */
final class VectorFloatKernels extends FloatKernels {
    private static final VectorSpecies<Float> S = VectorRowOps.S;
    private static final int L = VectorRowOps.L;

    VectorFloatKernels(int threads) {
        super(threads);
    }

    @Override
    public String name() {
        return "float32-vector-" + S.vectorBitSize();
    }

    @Override
    public double dot(float[] a, int aOff, float[] b, int bOff, int n) {
        return VectorRowOps.dot(a, aOff, b, bOff, n);
    }

    @Override
    public void axpy(double alpha, float[] x, int xOff, float[] y, int yOff, int n) {
        VectorRowOps.axpy(alpha, x, xOff, y, yOff, n);
    }

    @Override
    public void multiply(float[] a, int aOff, float[] b, int bOff, float[] out, int outOff, int n) {
        VectorRowOps.multiply(a, aOff, b, bOff, out, outOff, n);
    }

    @Override
    public double rmsNormRow(float[] x, int off, float[] w, float[] out, int n, double eps) {
        return VectorRowOps.rmsNormRow(x, off, w, out, n, eps);
    }

    @Override
    public void rmsNormBackwardRow(float[] dy, float[] x, int off, float[] w, double r, float[] dx, int n) {
        VectorRowOps.rmsNormBackwardRow(dy, x, off, w, r, dx, n);
    }

    @Override
    public void softmaxBackwardRow(float[] p, float[] ds, int off, int count, int n, double delta, double scale) {
        VectorRowOps.softmaxBackwardRow(p, ds, off, count, n, delta, scale);
    }

    @Override
    public double max(float[] x, int off, int n) {
        return VectorRowOps.max(x, off, n);
    }

    @Override
    public double expInPlace(float[] x, int off, int n, double scale, double shift) {
        return VectorRowOps.expInPlace(x, off, n, scale, shift);
    }

    @Override
    public void scale(float[] x, int off, int n, double s) {
        VectorRowOps.scale(x, off, n, s);
    }

    @Override
    public void siluMul(float[] gate, float[] up, float[] out, int n) {
        VectorRowOps.siluMul(gate, up, out, n);
    }

    @Override
    public void siluMulBackward(float[] gate, float[] up, float[] dOut, int n) {
        VectorRowOps.siluMulBackward(gate, up, dOut, n);
    }

    /** Largest weight copied for a transpose: 64 MB. */
    private static final long TRANSPOSE_LIMIT = 1 << 24;
    /** Rows of a weight taken at a time by the products: 256 rows of 896 floats (a 0.5B model's) are 0.9 MB. */
    private static final int W_BLOCK = 256;
    /**
     * The NN product takes w's rows in blocks of {@value #NN_BLOCK} above {@value #NN_BLOCKED_ABOVE} rows: a panel of
     * 4 vectors' width over 4,864 rows (a 0.5B model's down_proj, or a Hessian's) is 1.2 MB, past what stays in a
     * core's cache for every row tile (46 GFLOP/s on 2 cores, 167 blocked); below the bound, blocking would re-read dx
     * once per block for little gain.
     */
    private static final int NN_BLOCK = 512;
    private static final int NN_BLOCKED_ABOVE = 2048;

    /**
     * With enough rows, a moderate {@code w} is transposed once (a cost of 1/rows of the product) so the product
     * runs as broadcast FMAs over contiguous outputs, which avoids a horizontal sum per output. Huge matrices (an
     * lm_head of a large vocabulary) keep the dot-product form instead of being copied.
     */
    @Override
    public void matmulNT(float[] x, float[] w, float[] y, int rows, int in, int out, boolean accumulate) {
        if (rows >= 16 && out >= 2 * L && (long) in * out <= TRANSPOSE_LIMIT) {
            float[] wt = transpose(w, out, in);
            matmulNN(x, wt, y, rows, in, out, accumulate);
            return;
        }
        // w is too large to copy: every chunk of rows streams all of it, so one chunk per core
        forRows(rows, (long) in * out, perCore(rows, 2), (from, to) -> ntRows(x, w, y, from, to, in, out, accumulate));
    }

    private void ntRows(float[] x, float[] w, float[] y, int from, int to, int in, int out, boolean acc) {
        int bound = S.loopBound(in);
        // blocks of weight rows outside, row pairs inside: a block stays in cache for every pair (streaming a large w,
        // e.g. an LM head, once per pair made the product memory-bound); each output is computed as before
        int pairsEnd = from + (to - from) / 2 * 2;
        for (int o0 = 0; o0 < out; o0 += W_BLOCK) {
            int o1 = Math.min(out, o0 + W_BLOCK);
            ntPairs(x, w, y, from, pairsEnd, in, out, o0, o1, bound, acc);
        }
        for (int t = pairsEnd; t < to; t++) {
            for (int o = 0; o < out; o++) {
                VectorTiles.put(y, t * out + o, (float) dot(x, t * in, w, o * in, in), acc);
            }
        }
    }

    private void ntPairs(float[] x, float[] w, float[] y, int from, int to, int in, int out, int oFrom, int oTo, int bound,
                         boolean acc) {
        for (int t = from; t < to; t += 2) {
            int x0 = t * in;
            int x1 = x0 + in;
            int o = oFrom;
            for (; o + 3 < oTo; o += 4) {
                int w0 = o * in;
                int w1 = w0 + in;
                int w2 = w1 + in;
                int w3 = w2 + in;
                FloatVector a00 = FloatVector.zero(S), a01 = a00, a02 = a00, a03 = a00;
                FloatVector a10 = a00, a11 = a00, a12 = a00, a13 = a00;
                for (int i = 0; i < bound; i += L) {
                    FloatVector vx0 = FloatVector.fromArray(S, x, x0 + i);
                    FloatVector vx1 = FloatVector.fromArray(S, x, x1 + i);
                    FloatVector v = FloatVector.fromArray(S, w, w0 + i);
                    a00 = vx0.fma(v, a00);
                    a10 = vx1.fma(v, a10);
                    v = FloatVector.fromArray(S, w, w1 + i);
                    a01 = vx0.fma(v, a01);
                    a11 = vx1.fma(v, a11);
                    v = FloatVector.fromArray(S, w, w2 + i);
                    a02 = vx0.fma(v, a02);
                    a12 = vx1.fma(v, a12);
                    v = FloatVector.fromArray(S, w, w3 + i);
                    a03 = vx0.fma(v, a03);
                    a13 = vx1.fma(v, a13);
                }
                int y0 = t * out + o;
                int y1 = y0 + out;
                VectorTiles.put(y, y0, a00.reduceLanes(VectorOperators.ADD) + VectorTiles.tail(x, x0, w, w0, bound, in), acc);
                VectorTiles.put(y, y0 + 1, a01.reduceLanes(VectorOperators.ADD) + VectorTiles.tail(x, x0, w, w1, bound, in), acc);
                VectorTiles.put(y, y0 + 2, a02.reduceLanes(VectorOperators.ADD) + VectorTiles.tail(x, x0, w, w2, bound, in), acc);
                VectorTiles.put(y, y0 + 3, a03.reduceLanes(VectorOperators.ADD) + VectorTiles.tail(x, x0, w, w3, bound, in), acc);
                VectorTiles.put(y, y1, a10.reduceLanes(VectorOperators.ADD) + VectorTiles.tail(x, x1, w, w0, bound, in), acc);
                VectorTiles.put(y, y1 + 1, a11.reduceLanes(VectorOperators.ADD) + VectorTiles.tail(x, x1, w, w1, bound, in), acc);
                VectorTiles.put(y, y1 + 2, a12.reduceLanes(VectorOperators.ADD) + VectorTiles.tail(x, x1, w, w2, bound, in), acc);
                VectorTiles.put(y, y1 + 3, a13.reduceLanes(VectorOperators.ADD) + VectorTiles.tail(x, x1, w, w3, bound, in), acc);
            }
            for (; o < oTo; o++) {
                VectorTiles.put(y, t * out + o, (float) dot(x, x0, w, o * in, in), acc);
                VectorTiles.put(y, (t + 1) * out + o, (float) dot(x, x1, w, o * in, in), acc);
            }
        }
    }

    @Override
    public void matmulNN(float[] dy, float[] w, float[] dx, int rows, int out, int in, boolean accumulate) {
        // past the blocking bound w is streamed from memory by every chunk of rows: then one chunk per core
        int align = out > NN_BLOCKED_ABOVE ? perCore(rows, 4) : 4;
        forRows(rows, (long) in * out, align, (from, to) -> nnRows(dy, w, dx, from, to, out, in, accumulate, 0));
    }

    /**
     * Chunks of rows (a multiple of {@code tile}) that split {@code rows} into about one chunk per core: a product
     * whose weight does not stay in cache reads all of it once per chunk (an LM head of 151,936 × 896 is 544 MB a
     * read), so the four chunks per core that balance other products would quadruple its memory traffic.
     */
    private int perCore(int rows, int tile) {
        int perThread = (rows + threads() - 1) / threads();
        return Math.max(tile, (perThread + tile - 1) / tile * tile);
    }

    @Override
    public void matmulNNTriangular(float[] dy, float[] w, float[] dx, int n, int in, boolean lower) {
        forRows(n, (long) in * n / 2, 4, (from, to) -> nnRows(dy, w, dx, from, to, n, in, false, lower ? 1 : 2));
    }

    @Override
    public void matmulNNUpper(float[] dy, float[] w, float[] dx, int n, int out, boolean accumulate) {
        forRows(n, (long) out * n / 2, 4, (from, to) -> nnRows(dy, w, dx, from, to, out, n, accumulate, UPPER));
    }

    private static final int UPPER = 3;

    /**
     * @param band 0: every o; 1: o below the tile's last row + 1 (lower triangular dy); 2: o from the tile's first
     *             row; {@link #UPPER}: every o, but row tiles wholly below the diagonal of a square dx skipped
     */
    private void nnRows(float[] dy, float[] w, float[] dx, int from, int to, int out, int in, boolean acc, int band) {
        if (band == 1 || band == 2 || out <= NN_BLOCKED_ABOVE) {
            nnBlock(dy, w, dx, from, to, out, in, acc, band, 0, out);
            return;
        }
        // a tall w in blocks of rows: a block's column panel stays in cache for every row tile, where the whole panel
        // was read again from memory for each tile. Each block adds to what the ones before it left in dx, in the
        // same order of o, so every value is the same as in one pass.
        for (int o0 = 0; o0 < out; o0 += NN_BLOCK) {
            nnBlock(dy, w, dx, from, to, out, in, acc || o0 > 0, band, o0, Math.min(out, o0 + NN_BLOCK));
        }
    }

    /** Rows [from, to) of {@code dy·w} over the rows [blockFrom, blockTo) of w, added to dx when {@code acc}. */
    private void nnBlock(float[] dy, float[] w, float[] dx, int from, int to, int out, int in, boolean acc, int band,
                         int blockFrom, int blockTo) {
        int bound4 = in / (4 * L) * (4 * L);
        int bound2 = in / (2 * L) * (2 * L);
        int tiles = from + (to - from) / 4 * 4;
        // column panels outside, row tiles inside: a panel of w (out x 4L) stays in cache for every tile
        for (int i = 0; i < bound4; i += 4 * L) {
            for (int t = from; t < tiles && (band != UPPER || t < i + 4 * L); t += 4) {
                int oFrom = band == 2 ? t : blockFrom;
                int oTo = band == 1 ? Math.min(out, t + 4) : blockTo;
                VectorTiles.tile4x4(dy, w, in, i, dx, t, i, out, in, acc, oFrom, oTo);
            }
        }
        // columns left over by the 4-vector panels, in 2-vector ones
        for (int i = bound4; i < bound2; i += 2 * L) {
            for (int t = from; t < tiles && (band != UPPER || t < i + 2 * L); t += 4) {
                int d0 = t * out;
                int d1 = d0 + out;
                int d2 = d1 + out;
                int d3 = d2 + out;
                int r0 = t * in + i;
                int r1 = r0 + in;
                int r2 = r1 + in;
                int r3 = r2 + in;
                FloatVector c00, c01, c10, c11, c20, c21, c30, c31;
                if (acc) {
                    c00 = FloatVector.fromArray(S, dx, r0);
                    c01 = FloatVector.fromArray(S, dx, r0 + L);
                    c10 = FloatVector.fromArray(S, dx, r1);
                    c11 = FloatVector.fromArray(S, dx, r1 + L);
                    c20 = FloatVector.fromArray(S, dx, r2);
                    c21 = FloatVector.fromArray(S, dx, r2 + L);
                    c30 = FloatVector.fromArray(S, dx, r3);
                    c31 = FloatVector.fromArray(S, dx, r3 + L);
                } else {
                    c00 = FloatVector.zero(S);
                    c01 = c00;
                    c10 = c00;
                    c11 = c00;
                    c20 = c00;
                    c21 = c00;
                    c30 = c00;
                    c31 = c00;
                }
                int oFrom = band == 2 ? t : blockFrom;
                int oTo = band == 1 ? Math.min(out, t + 4) : blockTo;
                for (int o = oFrom; o < oTo; o++) {
                    FloatVector w0 = FloatVector.fromArray(S, w, o * in + i);
                    FloatVector w1 = FloatVector.fromArray(S, w, o * in + i + L);
                    FloatVector b = FloatVector.broadcast(S, dy[d0 + o]);
                    c00 = w0.fma(b, c00);
                    c01 = w1.fma(b, c01);
                    b = FloatVector.broadcast(S, dy[d1 + o]);
                    c10 = w0.fma(b, c10);
                    c11 = w1.fma(b, c11);
                    b = FloatVector.broadcast(S, dy[d2 + o]);
                    c20 = w0.fma(b, c20);
                    c21 = w1.fma(b, c21);
                    b = FloatVector.broadcast(S, dy[d3 + o]);
                    c30 = w0.fma(b, c30);
                    c31 = w1.fma(b, c31);
                }
                c00.intoArray(dx, r0);
                c01.intoArray(dx, r0 + L);
                c10.intoArray(dx, r1);
                c11.intoArray(dx, r1 + L);
                c20.intoArray(dx, r2);
                c21.intoArray(dx, r2 + L);
                c30.intoArray(dx, r3);
                c31.intoArray(dx, r3 + L);
            }
        }
        for (int t = from; t < tiles; t++) {
            nnColumns(dy, w, dx, t, out, in, bound2, acc, blockFrom, blockTo);
        }
        for (int t = tiles; t < to; t++) {
            int d0 = t * out;
            for (int i = 0; i < bound2; i += 2 * L) {
                int r0 = t * in + i;
                FloatVector c0 = acc ? FloatVector.fromArray(S, dx, r0) : FloatVector.zero(S);
                FloatVector c1 = acc ? FloatVector.fromArray(S, dx, r0 + L) : FloatVector.zero(S);
                for (int o = blockFrom; o < blockTo; o++) {
                    FloatVector b = FloatVector.broadcast(S, dy[d0 + o]);
                    c0 = FloatVector.fromArray(S, w, o * in + i).fma(b, c0);
                    c1 = FloatVector.fromArray(S, w, o * in + i + L).fma(b, c1);
                }
                c0.intoArray(dx, r0);
                c1.intoArray(dx, r0 + L);
            }
            nnColumns(dy, w, dx, t, out, in, bound2, acc, blockFrom, blockTo);
        }
        // the single-row paths above run over every o: the skipped entries of a triangular dy are zeros
    }

    /**
     * A frozen weight's forward, {@code y = x · wᵀ}, split by w's rows so that each is read from memory once (a
     * split by x's rows made every worker read all of w, and a training batch has few rows next to w's size): four
     * rows of w at a time against every four rows of x, as 4 × 4 dot products, with no transposed copy of w. Each is
     * the chain {@link #dot} runs (FMAs over whole vectors, then the lanes summed), so the same bits as a matVec.
     */
    @Override
    public void matmulNT(float[] x, FrozenMatrix w, float[] y, int rows) {
        int out = w.rows();
        int in = w.cols();
        if (in % L != 0 || out % 4 != 0) {
            super.matmulNT(x, w, y, rows);
            return;
        }
        forRows(out / 4, (long) rows * in * 4, (from, to) -> FrozenProducts.ntFrozen(x, w, y, rows, in, out, from * 4, to * 4));
    }

    /**
     * A frozen weight's input gradient, {@code dx (+)= dy · w}: each worker takes a range of dy's rows and reads w in
     * order, a block of {@value FrozenProducts#FROZEN_BLOCK} rows at a time, against its rows in 4 × 4L tiles, so a block stays in
     * cache for every tile. Splitting by column panels of w instead read it 256 bytes a row (an LM head's 151,936 rows
     * lie 3.5 KB apart, a TLB miss each). Each output is the FMA chain over o that {@link #matmulNN} computes.
     */
    @Override
    public void matmulNN(float[] dy, FrozenMatrix w, float[] dx, int rows, boolean accumulate) {
        int out = w.rows();
        int in = w.cols();
        if (in % (4 * L) != 0) {
            super.matmulNN(dy, w, dx, rows, accumulate);
            return;
        }
        forRows(rows, (long) in * out, perCore(rows, 4),
                (from, to) -> FrozenProducts.nnFrozen(dy, w, dx, from, to, out, in, accumulate));
    }

    @Override
    public void copyRow(FrozenMatrix w, int row, float[] dst, int off) {
        w.rowInto(row, dst, off);
    }

    /** Columns [from, in) of one row of {@code dy·w}. */
    private void nnColumns(float[] dy, float[] w, float[] dx, int t, int out, int in, int from, boolean acc, int oFrom, int oTo) {
        int n = in - from;
        if (n == 0) {
            return;
        }
        int row = t * in + from;
        if (!acc) {
            Arrays.fill(dx, row, row + n, 0f);
        }
        for (int o = oFrom; o < oTo; o++) {
            float d = dy[t * out + o];
            if (d != 0f) {
                axpy(d, w, o * in + from, dx, row, n);
            }
        }
    }
}
