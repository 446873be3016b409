package dev.hexforge.kernels;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * The register tiles the products of {@link VectorFloatKernels} are made of: 4 × 4 dot products for {@code x·wᵀ},
 * 4-row × 4-vector FMA tiles for {@code dy·w}, and their one-row and scalar edges.
 */
final class VectorTiles {
    private static final VectorSpecies<Float> S = VectorRowOps.S;
    private static final int L = VectorRowOps.L;

    private VectorTiles() {
    }

    static float tail(float[] x, int xOff, float[] w, int wOff, int from, int n) {
        float s = 0f;
        for (int i = from; i < n; i++) {
            s += x[xOff + i] * w[wOff + i];
        }
        return s;
    }

    static void put(float[] y, int i, float v, boolean acc) {
        y[i] = acc ? y[i] + v : v;
    }

    /**
     * The 4-row × 4-vector tile of rows t.. and columns i.. of {@code dy·w} over o in [oFrom, oTo): 16 accumulators,
     * 4 loads of w and 4 broadcasts of dy a step (a 4 × 2 tile did 6 for 8 products, 40–130 GFLOP/s against 100–170).
     * Each output is the same chain of FMAs in the same order of o as in any other tile shape. Row o of the panel is
     * read at {@code w[o · wStride + wCol ..]}: w itself ({@code wStride = in}, {@code wCol = i}) or a dense copy of
     * the panel.
     */
    static void tile4x4(float[] dy, float[] w, int wStride, int wCol, float[] dx, int t, int i, int out, int in,
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

    /** {@code y[t..t+3, o..o+3]} as 16 dot products of length {@code in} (a multiple of L): 8 loads for 16 FMAs. */
    static void dotTile4x4(float[] x, int t, float[] w, int w0, float[] y, int o, int in, int out) {
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
    static void dotTile1x4(float[] x, int t, float[] w, int w0, float[] y, int o, int in, int out) {
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

    static void store4(float[] y, int at, FloatVector a0, FloatVector a1, FloatVector a2, FloatVector a3) {
        y[at] = a0.reduceLanes(VectorOperators.ADD);
        y[at + 1] = a1.reduceLanes(VectorOperators.ADD);
        y[at + 2] = a2.reduceLanes(VectorOperators.ADD);
        y[at + 3] = a3.reduceLanes(VectorOperators.ADD);
    }

    /** One row of {@link #tile4x4}: the same FMA chain over o for each output. */
    static void row1x4(float[] dy, float[] w, int wStride, int wCol, float[] dx, int t, int i, int out, int in,
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
}
