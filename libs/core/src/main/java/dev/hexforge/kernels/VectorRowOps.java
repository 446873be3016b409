package dev.hexforge.kernels;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

import java.util.Arrays;

/**
 * The element-wise float32 kernels of {@link VectorFloatKernels} on jdk.incubator.vector: dot products, AXPY,
 * products, RMSNorm rows and their gradients, the softmax's gradient, exp, and SiLU, over whole vectors then a
 * scalar tail.
 */
final class VectorRowOps {
    static final VectorSpecies<Float> S = FloatVector.SPECIES_PREFERRED;
    static final int L = S.length();

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

    private VectorRowOps() {
    }


    static double dot(float[] a, int aOff, float[] b, int bOff, int n) {
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

    static void axpy(double alpha, float[] x, int xOff, float[] y, int yOff, int n) {
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

    static void multiply(float[] a, int aOff, float[] b, int bOff, float[] out, int outOff, int n) {
        int bound = S.loopBound(n);
        int i = 0;
        for (; i < bound; i += L) {
            FloatVector.fromArray(S, a, aOff + i).mul(FloatVector.fromArray(S, b, bOff + i)).intoArray(out, outOff + i);
        }
        for (; i < n; i++) {
            out[outOff + i] = a[aOff + i] * b[bOff + i];
        }
    }

    static double rmsNormRow(float[] x, int off, float[] w, float[] out, int n, double eps) {
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

    static void rmsNormBackwardRow(float[] dy, float[] x, int off, float[] w, double r, float[] dx, int n) {
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

    static void softmaxBackwardRow(float[] p, float[] ds, int off, int count, int n, double delta, double scale) {
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

    static double max(float[] x, int off, int n) {
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

    static double expInPlace(float[] x, int off, int n, double scale, double shift) {
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

    static void scale(float[] x, int off, int n, double s) {
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

    static void siluMul(float[] gate, float[] up, float[] out, int n) {
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

    static void siluMulBackward(float[] gate, float[] up, float[] dOut, int n) {
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
}
