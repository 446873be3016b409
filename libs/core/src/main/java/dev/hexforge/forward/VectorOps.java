package dev.hexforge.forward;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

import java.util.stream.IntStream;

/** SIMD kernels on jdk.incubator.vector; rows of large matrix-vector products are split across cores. */
public final class VectorOps implements TensorOps {
    private static final VectorSpecies<Float> S = FloatVector.SPECIES_PREFERRED;
    private static final long PARALLEL_THRESHOLD = 1 << 18;

    @Override
    public float dot(float[] a, int aOff, float[] b, int bOff, int n) {
        int step = S.length();
        int bound = S.loopBound(n);
        FloatVector acc0 = FloatVector.zero(S);
        FloatVector acc1 = FloatVector.zero(S);
        int i = 0;
        for (; i + step < bound; i += 2 * step) {
            acc0 = FloatVector.fromArray(S, a, aOff + i).fma(FloatVector.fromArray(S, b, bOff + i), acc0);
            acc1 = FloatVector.fromArray(S, a, aOff + i + step).fma(FloatVector.fromArray(S, b, bOff + i + step), acc1);
        }
        for (; i < bound; i += step) {
            acc0 = FloatVector.fromArray(S, a, aOff + i).fma(FloatVector.fromArray(S, b, bOff + i), acc0);
        }
        float s = acc0.add(acc1).reduceLanes(VectorOperators.ADD);
        for (; i < n; i++) {
            s += a[aOff + i] * b[bOff + i];
        }
        return s;
    }

    @Override
    public void matVec(float[] w, int rows, int cols, float[] x, int xOff, float[] y, int yOff) {
        if ((long) rows * cols < PARALLEL_THRESHOLD) {
            for (int r = 0; r < rows; r++) {
                y[yOff + r] = dot(w, r * cols, x, xOff, cols);
            }
            return;
        }
        int chunks = Math.min(rows, Runtime.getRuntime().availableProcessors() * 4);
        IntStream.range(0, chunks).parallel().forEach(c -> {
            int from = (int) ((long) rows * c / chunks);
            int to = (int) ((long) rows * (c + 1) / chunks);
            for (int r = from; r < to; r++) {
                y[yOff + r] = dot(w, r * cols, x, xOff, cols);
            }
        });
    }

    @Override
    public void axpy(float a, float[] x, int xOff, float[] y, int yOff, int n) {
        int bound = S.loopBound(n);
        FloatVector va = FloatVector.broadcast(S, a);
        int i = 0;
        for (; i < bound; i += S.length()) {
            FloatVector.fromArray(S, x, xOff + i).fma(va, FloatVector.fromArray(S, y, yOff + i)).intoArray(y, yOff + i);
        }
        for (; i < n; i++) {
            y[yOff + i] += a * x[xOff + i];
        }
    }

    @Override
    public String name() {
        return "vector-" + S.vectorBitSize();
    }
}
