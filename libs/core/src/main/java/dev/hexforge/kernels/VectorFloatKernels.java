package dev.hexforge.kernels;

import dev.hexforge.safetensors.FloatConversion;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShape;
import jdk.incubator.vector.VectorSpecies;

import java.util.Arrays;

/**
 * Float32 training kernels on jdk.incubator.vector. {@code x·wᵀ} runs in 2×4 register tiles of dot products;
 * {@code dy·w} in 4-row × 4-vector tiles of broadcast FMAs, so no horizontal sums are needed there.
 */
final class VectorFloatKernels extends FloatKernels {
    private static final VectorSpecies<Float> S = FloatVector.SPECIES_PREFERRED;
    private static final int L = S.length();

    private static final float LOG2E = 1.44269504088896341f;
    private static final float LN2_HI = 0.693359375f;
    private static final float LN2_LO = -2.12194440e-4f;
    private static final float ROUND = 12582912f; // 1.5·2^23: adding and subtracting it rounds to an integer

    /**
     * e^x from additions and multiplications only (Cephes' expf: x = n·ln2 + r, |r| ≤ ln2/2, degree-6 polynomial,
     * times 2^n), within 2 ulp. Unlike the Vector API's EXP, which is a native intrinsic once compiled and a
     * different fallback before, these operations round the same way in every JIT state, so a seed reproduces its
     * loss curve exactly.
     */
    static FloatVector exp(FloatVector x) {
        x = x.max(-87.3f).min(88.3f);
        FloatVector n = x.mul(LOG2E).add(ROUND).sub(ROUND);
        FloatVector r = x.sub(n.mul(LN2_HI)).sub(n.mul(LN2_LO));
        FloatVector p = r.mul(1.9875691500E-4f).add(1.3981999507E-3f).mul(r).add(8.3334519073E-3f).mul(r)
                .add(4.1665795894E-2f).mul(r).add(1.6666665459E-1f).mul(r).add(5.0000001201E-1f);
        FloatVector e = p.mul(r.mul(r)).add(r).add(1f);
        // 2^n: n + 127 + 2^23 holds n + 127 in its low mantissa bits; shifting by 23 makes them the exponent
        FloatVector scale = n.add(127f + 8388608f).viewAsIntegralLanes().lanewise(VectorOperators.LSHL, 23)
                .viewAsFloatingLanes().reinterpretAsFloats();
        return e.mul(scale);
    }

    /** {@link #exp(FloatVector)} for one value, operation for operation. */
    static float exp(float x) {
        x = Math.min(Math.max(x, -87.3f), 88.3f);
        float n = x * LOG2E + ROUND - ROUND;
        float r = x - n * LN2_HI - n * LN2_LO;
        float p = ((((1.9875691500E-4f * r + 1.3981999507E-3f) * r + 8.3334519073E-3f) * r + 4.1665795894E-2f) * r
                + 1.6666665459E-1f) * r + 5.0000001201E-1f;
        float e = p * (r * r) + r + 1f;
        return e * Float.intBitsToFloat(Float.floatToRawIntBits(n + (127f + 8388608f)) << 23);
    }

    VectorFloatKernels(int threads) {
        super(threads);
    }

    @Override
    public String name() {
        return "float32-vector-" + S.vectorBitSize();
    }

    @Override
    public double dot(float[] a, int aOff, float[] b, int bOff, int n) {
        int bound = S.loopBound(n);
        FloatVector acc = FloatVector.zero(S);
        int i = 0;
        for (; i < bound; i += L) {
            acc = FloatVector.fromArray(S, a, aOff + i).fma(FloatVector.fromArray(S, b, bOff + i), acc);
        }
        float s = acc.reduceLanes(VectorOperators.ADD);
        for (; i < n; i++) {
            s += a[aOff + i] * b[bOff + i];
        }
        return s;
    }

    @Override
    public void axpy(double alpha, float[] x, int xOff, float[] y, int yOff, int n) {
        float a = (float) alpha;
        FloatVector va = FloatVector.broadcast(S, a);
        int bound = S.loopBound(n);
        int i = 0;
        for (; i < bound; i += L) {
            FloatVector.fromArray(S, x, xOff + i).fma(va, FloatVector.fromArray(S, y, yOff + i)).intoArray(y, yOff + i);
        }
        for (; i < n; i++) {
            y[yOff + i] += a * x[xOff + i];
        }
    }

    @Override
    public void multiply(float[] a, int aOff, float[] b, int bOff, float[] out, int outOff, int n) {
        int bound = S.loopBound(n);
        int i = 0;
        for (; i < bound; i += L) {
            FloatVector.fromArray(S, a, aOff + i).mul(FloatVector.fromArray(S, b, bOff + i)).intoArray(out, outOff + i);
        }
        for (; i < n; i++) {
            out[outOff + i] = a[aOff + i] * b[bOff + i];
        }
    }

    @Override
    public double rmsNormRow(float[] x, int off, float[] w, float[] out, int n, double eps) {
        float r = (float) (1.0 / Math.sqrt(dot(x, off, x, off, n) / n + eps));
        FloatVector vr = FloatVector.broadcast(S, r);
        int bound = S.loopBound(n);
        int j = 0;
        for (; j < bound; j += L) {
            FloatVector.fromArray(S, w, j).mul(FloatVector.fromArray(S, x, off + j)).mul(vr).intoArray(out, off + j);
        }
        for (; j < n; j++) {
            out[off + j] = w[j] * x[off + j] * r;
        }
        return r;
    }

    @Override
    public void rmsNormBackwardRow(float[] dy, float[] x, int off, float[] w, double r, float[] dx, int n) {
        int bound = S.loopBound(n);
        FloatVector acc = FloatVector.zero(S);
        int j = 0;
        for (; j < bound; j += L) {
            acc = FloatVector.fromArray(S, w, j).mul(FloatVector.fromArray(S, dy, off + j))
                    .fma(FloatVector.fromArray(S, x, off + j), acc);
        }
        double g = acc.reduceLanes(VectorOperators.ADD);
        for (; j < n; j++) {
            g += w[j] * dy[off + j] * x[off + j];
        }
        float coef = (float) (r * r * r * g / n);
        FloatVector vr = FloatVector.broadcast(S, (float) r);
        FloatVector vc = FloatVector.broadcast(S, -coef);
        for (j = 0; j < bound; j += L) {
            FloatVector v = FloatVector.fromArray(S, w, j).mul(FloatVector.fromArray(S, dy, off + j)).mul(vr)
                    .add(FloatVector.fromArray(S, x, off + j).mul(vc));
            v.add(FloatVector.fromArray(S, dx, off + j)).intoArray(dx, off + j);
        }
        for (; j < n; j++) {
            dx[off + j] += (float) r * w[j] * dy[off + j] - coef * x[off + j];
        }
    }

    @Override
    public void softmaxBackwardRow(float[] p, float[] ds, int off, int count, int n, double delta, double scale) {
        FloatVector vd = FloatVector.broadcast(S, (float) delta);
        FloatVector vs = FloatVector.broadcast(S, (float) scale);
        int bound = S.loopBound(count);
        int j = 0;
        for (; j < bound; j += L) {
            FloatVector.fromArray(S, p, off + j).mul(FloatVector.fromArray(S, ds, off + j).sub(vd)).mul(vs)
                    .intoArray(ds, off + j);
        }
        for (; j < count; j++) {
            ds[off + j] = (float) (p[off + j] * (ds[off + j] - delta) * scale);
        }
        Arrays.fill(ds, off + count, off + n, 0f);
    }

    @Override
    public double max(float[] x, int off, int n) {
        int bound = S.loopBound(n);
        FloatVector m = FloatVector.broadcast(S, Float.NEGATIVE_INFINITY);
        int i = 0;
        for (; i < bound; i += L) {
            m = m.max(FloatVector.fromArray(S, x, off + i));
        }
        float r = m.reduceLanes(VectorOperators.MAX);
        for (; i < n; i++) {
            r = Math.max(r, x[off + i]);
        }
        return r;
    }

    @Override
    public double expInPlace(float[] x, int off, int n, double scale, double shift) {
        int bound = S.loopBound(n);
        FloatVector vs = FloatVector.broadcast(S, (float) scale);
        FloatVector vShift = FloatVector.broadcast(S, (float) shift);
        FloatVector acc = FloatVector.zero(S);
        int i = 0;
        for (; i < bound; i += L) {
            FloatVector e = exp(FloatVector.fromArray(S, x, off + i).mul(vs).sub(vShift));
            e.intoArray(x, off + i);
            acc = acc.add(e);
        }
        double sum = acc.reduceLanes(VectorOperators.ADD);
        for (; i < n; i++) {
            float e = exp(x[off + i] * (float) scale - (float) shift);
            x[off + i] = e;
            sum += e;
        }
        return sum;
    }

    @Override
    public void scale(float[] x, int off, int n, double s) {
        int bound = S.loopBound(n);
        FloatVector v = FloatVector.broadcast(S, (float) s);
        int i = 0;
        for (; i < bound; i += L) {
            FloatVector.fromArray(S, x, off + i).mul(v).intoArray(x, off + i);
        }
        for (; i < n; i++) {
            x[off + i] *= (float) s;
        }
    }

    @Override
    public void siluMul(float[] gate, float[] up, float[] out, int n) {
        int bound = S.loopBound(n);
        FloatVector one = FloatVector.broadcast(S, 1f);
        int i = 0;
        for (; i < bound; i += L) {
            FloatVector g = FloatVector.fromArray(S, gate, i);
            FloatVector sig = one.div(one.add(exp(g.neg())));
            g.mul(sig).mul(FloatVector.fromArray(S, up, i)).intoArray(out, i);
        }
        for (; i < n; i++) {
            float g = gate[i];
            out[i] = g * (1f / (1f + exp(-g))) * up[i];
        }
    }

    @Override
    public void siluMulBackward(float[] gate, float[] up, float[] dOut, int n) {
        int bound = S.loopBound(n);
        FloatVector one = FloatVector.broadcast(S, 1f);
        int i = 0;
        for (; i < bound; i += L) {
            FloatVector g = FloatVector.fromArray(S, gate, i);
            FloatVector u = FloatVector.fromArray(S, up, i);
            FloatVector d = FloatVector.fromArray(S, dOut, i);
            FloatVector sig = one.div(one.add(exp(g.neg())));
            d.mul(g).mul(sig).intoArray(up, i);
            d.mul(u).mul(sig).mul(one.add(g.mul(one.sub(sig)))).intoArray(gate, i);
        }
        for (; i < n; i++) {
            float g = gate[i];
            float sg = 1f / (1f + exp(-g));
            float d = dOut[i];
            float u = up[i];
            up[i] = d * g * sg;
            gate[i] = d * u * sg * (1 + g * (1 - sg));
        }
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
                put(y, t * out + o, (float) dot(x, t * in, w, o * in, in), acc);
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
                put(y, y0, a00.reduceLanes(VectorOperators.ADD) + tail(x, x0, w, w0, bound, in), acc);
                put(y, y0 + 1, a01.reduceLanes(VectorOperators.ADD) + tail(x, x0, w, w1, bound, in), acc);
                put(y, y0 + 2, a02.reduceLanes(VectorOperators.ADD) + tail(x, x0, w, w2, bound, in), acc);
                put(y, y0 + 3, a03.reduceLanes(VectorOperators.ADD) + tail(x, x0, w, w3, bound, in), acc);
                put(y, y1, a10.reduceLanes(VectorOperators.ADD) + tail(x, x1, w, w0, bound, in), acc);
                put(y, y1 + 1, a11.reduceLanes(VectorOperators.ADD) + tail(x, x1, w, w1, bound, in), acc);
                put(y, y1 + 2, a12.reduceLanes(VectorOperators.ADD) + tail(x, x1, w, w2, bound, in), acc);
                put(y, y1 + 3, a13.reduceLanes(VectorOperators.ADD) + tail(x, x1, w, w3, bound, in), acc);
            }
            for (; o < oTo; o++) {
                put(y, t * out + o, (float) dot(x, x0, w, o * in, in), acc);
                put(y, (t + 1) * out + o, (float) dot(x, x1, w, o * in, in), acc);
            }
        }
    }

    private static float tail(float[] x, int xOff, float[] w, int wOff, int from, int n) {
        float s = 0f;
        for (int i = from; i < n; i++) {
            s += x[xOff + i] * w[wOff + i];
        }
        return s;
    }

    private static void put(float[] y, int i, float v, boolean acc) {
        y[i] = acc ? y[i] + v : v;
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
                tile4x4(dy, w, in, i, dx, t, i, out, in, acc, oFrom, oTo);
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
     * The 4-row × 4-vector tile of rows t.. and columns i.. of {@code dy·w} over o in [oFrom, oTo): 16 accumulators,
     * 4 loads of w and 4 broadcasts of dy a step (a 4 × 2 tile did 6 for 8 products, 40–130 GFLOP/s against 100–170).
     * Each output is the same chain of FMAs in the same order of o as in any other tile shape. Row o of the panel is
     * read at {@code w[o · wStride + wCol ..]}: w itself ({@code wStride = in}, {@code wCol = i}) or a dense copy of
     * the panel.
     */
    private static void tile4x4(float[] dy, float[] w, int wStride, int wCol, float[] dx, int t, int i, int out, int in,
                                boolean acc, int oFrom, int oTo) {
        int d0 = t * out;
        int d1 = d0 + out;
        int d2 = d1 + out;
        int d3 = d2 + out;
        int r0 = t * in + i;
        int r1 = r0 + in;
        int r2 = r1 + in;
        int r3 = r2 + in;
        FloatVector c00, c01, c02, c03, c10, c11, c12, c13, c20, c21, c22, c23, c30, c31, c32, c33;
        if (acc) {
            c00 = FloatVector.fromArray(S, dx, r0);
            c01 = FloatVector.fromArray(S, dx, r0 + L);
            c02 = FloatVector.fromArray(S, dx, r0 + 2 * L);
            c03 = FloatVector.fromArray(S, dx, r0 + 3 * L);
            c10 = FloatVector.fromArray(S, dx, r1);
            c11 = FloatVector.fromArray(S, dx, r1 + L);
            c12 = FloatVector.fromArray(S, dx, r1 + 2 * L);
            c13 = FloatVector.fromArray(S, dx, r1 + 3 * L);
            c20 = FloatVector.fromArray(S, dx, r2);
            c21 = FloatVector.fromArray(S, dx, r2 + L);
            c22 = FloatVector.fromArray(S, dx, r2 + 2 * L);
            c23 = FloatVector.fromArray(S, dx, r2 + 3 * L);
            c30 = FloatVector.fromArray(S, dx, r3);
            c31 = FloatVector.fromArray(S, dx, r3 + L);
            c32 = FloatVector.fromArray(S, dx, r3 + 2 * L);
            c33 = FloatVector.fromArray(S, dx, r3 + 3 * L);
        } else {
            c00 = FloatVector.zero(S);
            c01 = c00;
            c02 = c00;
            c03 = c00;
            c10 = c00;
            c11 = c00;
            c12 = c00;
            c13 = c00;
            c20 = c00;
            c21 = c00;
            c22 = c00;
            c23 = c00;
            c30 = c00;
            c31 = c00;
            c32 = c00;
            c33 = c00;
        }
        for (int o = oFrom; o < oTo; o++) {
            int wo = o * wStride + wCol;
            FloatVector w0 = FloatVector.fromArray(S, w, wo);
            FloatVector w1 = FloatVector.fromArray(S, w, wo + L);
            FloatVector w2 = FloatVector.fromArray(S, w, wo + 2 * L);
            FloatVector w3 = FloatVector.fromArray(S, w, wo + 3 * L);
            FloatVector b = FloatVector.broadcast(S, dy[d0 + o]);
            c00 = w0.fma(b, c00);
            c01 = w1.fma(b, c01);
            c02 = w2.fma(b, c02);
            c03 = w3.fma(b, c03);
            b = FloatVector.broadcast(S, dy[d1 + o]);
            c10 = w0.fma(b, c10);
            c11 = w1.fma(b, c11);
            c12 = w2.fma(b, c12);
            c13 = w3.fma(b, c13);
            b = FloatVector.broadcast(S, dy[d2 + o]);
            c20 = w0.fma(b, c20);
            c21 = w1.fma(b, c21);
            c22 = w2.fma(b, c22);
            c23 = w3.fma(b, c23);
            b = FloatVector.broadcast(S, dy[d3 + o]);
            c30 = w0.fma(b, c30);
            c31 = w1.fma(b, c31);
            c32 = w2.fma(b, c32);
            c33 = w3.fma(b, c33);
        }
        c00.intoArray(dx, r0);
        c01.intoArray(dx, r0 + L);
        c02.intoArray(dx, r0 + 2 * L);
        c03.intoArray(dx, r0 + 3 * L);
        c10.intoArray(dx, r1);
        c11.intoArray(dx, r1 + L);
        c12.intoArray(dx, r1 + 2 * L);
        c13.intoArray(dx, r1 + 3 * L);
        c20.intoArray(dx, r2);
        c21.intoArray(dx, r2 + L);
        c22.intoArray(dx, r2 + 2 * L);
        c23.intoArray(dx, r2 + 3 * L);
        c30.intoArray(dx, r3);
        c31.intoArray(dx, r3 + L);
        c32.intoArray(dx, r3 + 2 * L);
        c33.intoArray(dx, r3 + 3 * L);
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
        forRows(out / 4, (long) rows * in * 4, (from, to) -> ntFrozen(x, w, y, rows, in, out, from * 4, to * 4));
    }

    /** Rows [oFrom, oTo) of w against every row of x; bf16 rows are widened four at a time into a 4 × in tile. */
    private static void ntFrozen(float[] x, FrozenMatrix w, float[] y, int rows, int in, int out, int oFrom, int oTo) {
        float[] direct = w.floats();
        float[] tile = direct != null ? null : new float[4 * in];
        short[] bits = direct != null ? null : new short[4 * in];
        int quads = rows / 4 * 4;
        for (int o = oFrom; o < oTo; o += 4) {
            float[] src = direct;
            int w0 = o * in;
            if (direct == null) {
                widen(w, o * in, bits, tile, 4 * in);
                src = tile;
                w0 = 0;
            }
            for (int t = 0; t < quads; t += 4) {
                dotTile4x4(x, t, src, w0, y, o, in, out);
            }
            for (int t = quads; t < rows; t++) {
                dotTile1x4(x, t, src, w0, y, o, in, out);
            }
        }
    }

    /** {@code y[t..t+3, o..o+3]} as 16 dot products of length {@code in} (a multiple of L): 8 loads for 16 FMAs. */
    private static void dotTile4x4(float[] x, int t, float[] w, int w0, float[] y, int o, int in, int out) {
        int x0 = t * in;
        int x1 = x0 + in;
        int x2 = x1 + in;
        int x3 = x2 + in;
        int w1 = w0 + in;
        int w2 = w1 + in;
        int w3 = w2 + in;
        FloatVector a00 = FloatVector.zero(S), a01 = a00, a02 = a00, a03 = a00;
        FloatVector a10 = a00, a11 = a00, a12 = a00, a13 = a00;
        FloatVector a20 = a00, a21 = a00, a22 = a00, a23 = a00;
        FloatVector a30 = a00, a31 = a00, a32 = a00, a33 = a00;
        for (int i = 0; i < in; i += L) {
            FloatVector v0 = FloatVector.fromArray(S, w, w0 + i);
            FloatVector v1 = FloatVector.fromArray(S, w, w1 + i);
            FloatVector v2 = FloatVector.fromArray(S, w, w2 + i);
            FloatVector v3 = FloatVector.fromArray(S, w, w3 + i);
            FloatVector u = FloatVector.fromArray(S, x, x0 + i);
            a00 = u.fma(v0, a00);
            a01 = u.fma(v1, a01);
            a02 = u.fma(v2, a02);
            a03 = u.fma(v3, a03);
            u = FloatVector.fromArray(S, x, x1 + i);
            a10 = u.fma(v0, a10);
            a11 = u.fma(v1, a11);
            a12 = u.fma(v2, a12);
            a13 = u.fma(v3, a13);
            u = FloatVector.fromArray(S, x, x2 + i);
            a20 = u.fma(v0, a20);
            a21 = u.fma(v1, a21);
            a22 = u.fma(v2, a22);
            a23 = u.fma(v3, a23);
            u = FloatVector.fromArray(S, x, x3 + i);
            a30 = u.fma(v0, a30);
            a31 = u.fma(v1, a31);
            a32 = u.fma(v2, a32);
            a33 = u.fma(v3, a33);
        }
        store4(y, t * out + o, a00, a01, a02, a03);
        store4(y, (t + 1) * out + o, a10, a11, a12, a13);
        store4(y, (t + 2) * out + o, a20, a21, a22, a23);
        store4(y, (t + 3) * out + o, a30, a31, a32, a33);
    }

    /** One row of {@link #dotTile4x4}: the same chain for each output. */
    private static void dotTile1x4(float[] x, int t, float[] w, int w0, float[] y, int o, int in, int out) {
        int x0 = t * in;
        int w1 = w0 + in;
        int w2 = w1 + in;
        int w3 = w2 + in;
        FloatVector a0 = FloatVector.zero(S), a1 = a0, a2 = a0, a3 = a0;
        for (int i = 0; i < in; i += L) {
            FloatVector u = FloatVector.fromArray(S, x, x0 + i);
            a0 = u.fma(FloatVector.fromArray(S, w, w0 + i), a0);
            a1 = u.fma(FloatVector.fromArray(S, w, w1 + i), a1);
            a2 = u.fma(FloatVector.fromArray(S, w, w2 + i), a2);
            a3 = u.fma(FloatVector.fromArray(S, w, w3 + i), a3);
        }
        store4(y, t * out + o, a0, a1, a2, a3);
    }

    private static void store4(float[] y, int at, FloatVector a0, FloatVector a1, FloatVector a2, FloatVector a3) {
        y[at] = a0.reduceLanes(VectorOperators.ADD);
        y[at + 1] = a1.reduceLanes(VectorOperators.ADD);
        y[at + 2] = a2.reduceLanes(VectorOperators.ADD);
        y[at + 3] = a3.reduceLanes(VectorOperators.ADD);
    }

    /** Rows of w taken at a time by the input gradient: 64 rows of 896 floats are 229 KB. */
    private static final int FROZEN_BLOCK = 64;

    /**
     * A frozen weight's input gradient, {@code dx (+)= dy · w}: each worker takes a range of dy's rows and reads w in
     * order, a block of {@value #FROZEN_BLOCK} rows at a time, against its rows in 4 × 4L tiles, so a block stays in
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
                (from, to) -> nnFrozen(dy, w, dx, from, to, out, in, accumulate));
    }

    /**
     * Rows [from, to) of dy against all of w, a block of w's rows at a time; a bf16 block is widened into a dense
     * float32 one first (the FMA chain over o runs through the blocks in order either way, so the same bits).
     */
    private static void nnFrozen(float[] dy, FrozenMatrix w, float[] dx, int from, int to, int out, int in,
                                 boolean accumulate) {
        int width = 4 * L;
        int quads = from + (to - from) / 4 * 4;
        float[] direct = w.floats();
        float[] block = direct != null ? null : new float[Math.min(out, FROZEN_BLOCK) * in];
        short[] bits = direct != null ? null : new short[block.length];
        for (int o0 = 0; o0 < out; o0 += FROZEN_BLOCK) {
            int o1 = Math.min(out, o0 + FROZEN_BLOCK);
            boolean acc = accumulate || o0 > 0;
            float[] src = direct;
            int shift = 0;
            if (direct == null) {
                widen(w, o0 * in, bits, block, (o1 - o0) * in);
                src = block;
                shift = -o0 * in;
            }
            for (int i = 0; i < in; i += width) {
                for (int t = from; t < quads; t += 4) {
                    tile4x4(dy, src, in, i + shift, dx, t, i, out, in, acc, o0, o1);
                }
                for (int t = quads; t < to; t++) {
                    row1x4(dy, src, in, i + shift, dx, t, i, out, in, acc, o0, o1);
                }
            }
        }
    }

    /** One row of {@link #tile4x4}: the same FMA chain over o for each output. */
    private static void row1x4(float[] dy, float[] w, int wStride, int wCol, float[] dx, int t, int i, int out, int in,
                               boolean acc, int oFrom, int oTo) {
        int r0 = t * in + i;
        FloatVector c0, c1, c2, c3;
        if (acc) {
            c0 = FloatVector.fromArray(S, dx, r0);
            c1 = FloatVector.fromArray(S, dx, r0 + L);
            c2 = FloatVector.fromArray(S, dx, r0 + 2 * L);
            c3 = FloatVector.fromArray(S, dx, r0 + 3 * L);
        } else {
            c0 = FloatVector.zero(S);
            c1 = c0;
            c2 = c0;
            c3 = c0;
        }
        int d0 = t * out;
        for (int o = oFrom; o < oTo; o++) {
            int wo = o * wStride + wCol;
            FloatVector b = FloatVector.broadcast(S, dy[d0 + o]);
            c0 = FloatVector.fromArray(S, w, wo).fma(b, c0);
            c1 = FloatVector.fromArray(S, w, wo + L).fma(b, c1);
            c2 = FloatVector.fromArray(S, w, wo + 2 * L).fma(b, c2);
            c3 = FloatVector.fromArray(S, w, wo + 3 * L).fma(b, c3);
        }
        c0.intoArray(dx, r0);
        c1.intoArray(dx, r0 + L);
        c2.intoArray(dx, r0 + 2 * L);
        c3.intoArray(dx, r0 + 3 * L);
    }

    @Override
    public void copyRow(FrozenMatrix w, int row, float[] dst, int off) {
        w.rowInto(row, dst, off);
    }

    private static final VectorSpecies<Short> BF16 = VectorSpecies.of(short.class, VectorShape.forBitSize(L * 16));
    private static final VectorSpecies<Integer> BITS = VectorSpecies.of(int.class, S.vectorShape());

    /**
     * n values of a bf16 matrix from flat index {@code from} as float32 into {@code dst[0 ..]}: a bulk copy of the
     * bits into {@code bits} (a memory copy from a mapped file), then each moved into the high half of a float.
     */
    private static void widen(FrozenMatrix w, int from, short[] bits, float[] dst, int n) {
        w.bitsInto(from, bits, n);
        int i = 0;
        for (int bound = n / L * L; i < bound; i += L) {
            ((IntVector) ShortVector.fromArray(BF16, bits, i).convertShape(VectorOperators.S2I, BITS, 0))
                    .lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats().intoArray(dst, i);
        }
        for (; i < n; i++) {
            dst[i] = FloatConversion.bf16ToFloat(bits[i]);
        }
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
