package dev.hexforge.quant.gptq;

/**
 * {@code H = (2 / n) Σ x xᵀ} over the calibration rows a linear sees, accumulated row by row in double.
 */
public final class Hessian {
    private final int k;
    private final double[] h;
    private long rows;

    public Hessian(int k) {
        this.k = k;
        this.h = new double[k * k];
    }

    /** Adds rows of x [count, k]. */
    public void add(float[] x, int count) {
        for (int r = 0; r < count; r++) {
            int base = r * k;
            for (int i = 0; i < k; i++) {
                double xi = x[base + i];
                if (xi == 0) {
                    continue;
                }
                int hi = i * k;
                for (int j = i; j < k; j++) {
                    h[hi + j] += xi * x[base + j];
                }
            }
        }
        rows += count;
    }

    public long rows() {
        return rows;
    }

    /** The finished, symmetric matrix [k, k]. */
    public double[] matrix() {
        double[] out = new double[k * k];
        double f = rows == 0 ? 0 : 2.0 / rows;
        for (int i = 0; i < k; i++) {
            for (int j = i; j < k; j++) {
                double v = h[i * k + j] * f;
                out[i * k + j] = v;
                out[j * k + i] = v;
            }
        }
        return out;
    }

    /**
     * The calibration output error of replacing W by W', up to the constant 2/n: {@code Σ_rows δ H δᵀ}, δ = W − W'.
     */
    public static double outputError(float[] w, float[] wq, int out, int in, double[] h) {
        double total = 0;
        double[] d = new double[in];
        for (int r = 0; r < out; r++) {
            for (int i = 0; i < in; i++) {
                d[i] = (double) w[r * in + i] - wq[r * in + i];
            }
            for (int i = 0; i < in; i++) {
                if (d[i] == 0) {
                    continue;
                }
                double s = 0;
                for (int j = 0; j < in; j++) {
                    s += h[i * in + j] * d[j];
                }
                total += d[i] * s;
            }
        }
        return total;
    }
}
