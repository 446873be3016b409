package dev.hexforge.forward;

/**
 * RMSNorm as Hugging Face computes it in float32: {@code w · (x · rsqrt(mean(x²) + eps))}, the mean of squares summed
 * in double and rounded once. Used over the hidden size (the layer norms) and over head_dim (Qwen3's q/k norms).
 */
public final class RmsNorm {
    private RmsNorm() {
    }

    /** {@code n} values from {@code x[xOff]} normalised into {@code out[outOff]} (which may be the same place). */
    public static void row(float[] x, int xOff, float[] weight, float[] out, int outOff, int n, double eps) {
        double ss = 0;
        for (int i = 0; i < n; i++) {
            float v = x[xOff + i];
            ss += (double) v * v;
        }
        float variance = (float) (ss / n);
        float inv = (float) (1.0 / Math.sqrt(variance + (float) eps));
        for (int i = 0; i < n; i++) {
            out[outOff + i] = weight[i] * (x[xOff + i] * inv);
        }
    }

    /**
     * Qwen3's per-head norms, in place: every head of {@code heads · d} values in each of {@code rows} rows of
     * width {@code heads · d}.
     */
    public static void heads(float[] x, int rows, int heads, int d, float[] weight, double eps) {
        for (int r = 0; r < rows; r++) {
            for (int h = 0; h < heads; h++) {
                int off = (r * heads + h) * d;
                row(x, off, weight, x, off, d, eps);
            }
        }
    }
}
