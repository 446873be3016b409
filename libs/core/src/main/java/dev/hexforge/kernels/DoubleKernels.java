package dev.hexforge.kernels;

import java.util.Arrays;

/** Float64 training kernels for the finite-difference gradient check; plain loops. */
public final class DoubleKernels extends Kernels<double[]> {

    public DoubleKernels(int threads) {
        super(threads);
    }

    @Override
    public String name() {
        return "float64";
    }

    @Override
    public double[] alloc(int n) {
        return new double[n];
    }

    @Override
    public double[] of(float[] values) {
        double[] d = new double[values.length];
        for (int i = 0; i < d.length; i++) {
            d[i] = values[i];
        }
        return d;
    }

    @Override
    public float[] toFloats(double[] a) {
        float[] f = new float[a.length];
        for (int i = 0; i < f.length; i++) {
            f[i] = (float) a[i];
        }
        return f;
    }

    @Override
    public int length(double[] a) {
        return a.length;
    }

    @Override
    public double get(double[] a, int i) {
        return a[i];
    }

    @Override
    public void set(double[] a, int i, double v) {
        a[i] = v;
    }

    @Override
    public void add(double[] a, int i, double v) {
        a[i] += v;
    }

    @Override
    public void fill(double[] a, double v) {
        Arrays.fill(a, v);
    }

    @Override
    public double[] copy(double[] a) {
        return a.clone();
    }

    @Override
    public void copy(double[] src, int srcOff, double[] dst, int dstOff, int n) {
        System.arraycopy(src, srcOff, dst, dstOff, n);
    }

    @Override
    public double dot(double[] a, int aOff, double[] b, int bOff, int n) {
        double s = 0;
        for (int i = 0; i < n; i++) {
            s += a[aOff + i] * b[bOff + i];
        }
        return s;
    }

    @Override
    public void axpy(double alpha, double[] x, int xOff, double[] y, int yOff, int n) {
        for (int i = 0; i < n; i++) {
            y[yOff + i] += alpha * x[xOff + i];
        }
    }
}
