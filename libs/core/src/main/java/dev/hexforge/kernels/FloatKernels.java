package dev.hexforge.kernels;

import java.util.Arrays;

/** Float32 training kernels as plain loops: the readable baseline and the fallback without the vector module. */
public class FloatKernels extends Kernels<float[]> {

    public FloatKernels(int threads) {
        super(threads);
    }

    @Override
    public String name() {
        return "float32-scalar";
    }

    @Override
    public float[] alloc(int n) {
        return new float[n];
    }

    @Override
    public float[] of(float[] values) {
        return values;
    }

    @Override
    public float[] toFloats(float[] a) {
        return a.clone();
    }

    @Override
    public int length(float[] a) {
        return a.length;
    }

    @Override
    public double get(float[] a, int i) {
        return a[i];
    }

    @Override
    public void set(float[] a, int i, double v) {
        a[i] = (float) v;
    }

    @Override
    public void add(float[] a, int i, double v) {
        a[i] += (float) v;
    }

    @Override
    public void fill(float[] a, double v) {
        Arrays.fill(a, (float) v);
    }

    @Override
    public float[] copy(float[] a) {
        return a.clone();
    }

    @Override
    public void transposeInto(float[] m, int rows, int cols, float[] out) {
        // bands of 16 rows on every core: each band writes its own 16 columns of out
        forRows((rows + 15) / 16, 16L * cols, (from, to) -> {
            for (int i0 = from * 16; i0 < Math.min(rows, to * 16); i0 += 16) {
                for (int j0 = 0; j0 < cols; j0 += 16) {
                    for (int i = i0; i < Math.min(rows, i0 + 16); i++) {
                        for (int j = j0; j < Math.min(cols, j0 + 16); j++) {
                            out[j * rows + i] = m[i * cols + j];
                        }
                    }
                }
            }
        });
    }

    @Override
    public void copy(float[] src, int srcOff, float[] dst, int dstOff, int n) {
        System.arraycopy(src, srcOff, dst, dstOff, n);
    }

    @Override
    public double dot(float[] a, int aOff, float[] b, int bOff, int n) {
        float s = 0f;
        for (int i = 0; i < n; i++) {
            s += a[aOff + i] * b[bOff + i];
        }
        return s;
    }

    @Override
    public void axpy(double alpha, float[] x, int xOff, float[] y, int yOff, int n) {
        float a = (float) alpha;
        for (int i = 0; i < n; i++) {
            y[yOff + i] += a * x[xOff + i];
        }
    }
}
