package dev.hexforge.quant.gptq;

import dev.hexforge.quant.GroupQuantizer;
import dev.hexforge.quant.QuantSpec;
import dev.hexforge.quant.QuantizationException;
import dev.hexforge.quant.QuantizedLinear;

import java.util.Comparator;
import java.util.stream.IntStream;

/**
 * GPTQ (Frantar et al.): quantizes a linear column by column, spreading each column's rounding error over the
 * columns not yet quantized through the inverse Hessian of its calibration inputs. Blocks of 128 columns with lazy
 * batch updates; group parameters fitted when a group starts (or, with act-order, fitted up front per contiguous
 * group so the ONNX formats still see contiguous groups); dampening raised automatically when Cholesky fails.
 */
public final class Gptq {

    /**
     * @param blockSize   columns per lazy-update block
     * @param dampPercent dampening as a fraction of the mean Hessian diagonal
     * @param actOrder    quantize columns in order of decreasing Hessian diagonal (static groups)
     */
    public record Options(int blockSize, double dampPercent, boolean actOrder) {
        public static Options defaults() {
            return new Options(128, 0.01, false);
        }
    }

    private Gptq() {
    }

    public static QuantizedLinear quantize(float[] weight, int out, int in, double[] hessian, QuantSpec spec, Options opt) {
        int k = in;
        double[] h = hessian.clone();
        double[] w = new double[out * k];
        for (int i = 0; i < w.length; i++) {
            w[i] = weight[i];
        }
        for (int j = 0; j < k; j++) {
            if (h[j * k + j] == 0) {
                h[j * k + j] = 1;
                for (int r = 0; r < out; r++) {
                    w[r * k + j] = 0;
                }
            }
        }
        int groups = spec.groups(k);
        int g = spec.effectiveGroup(k);
        GroupQuantizer.Params[] params = new GroupQuantizer.Params[out * groups];
        boolean staticParams = spec.groupSize() == 0 || opt.actOrder();
        if (staticParams) {
            for (int r = 0; r < out; r++) {
                for (int grp = 0; grp < groups; grp++) {
                    params[r * groups + grp] = fit(w, r, k, grp * g, Math.min(k, grp * g + g), spec);
                }
            }
        }
        int[] perm = IntStream.range(0, k).toArray();
        if (opt.actOrder()) {
            double[] hh = h;
            perm = IntStream.range(0, k).boxed().sorted(Comparator.comparingDouble((Integer j) -> -hh[j * k + j]))
                    .mapToInt(Integer::intValue).toArray();
            w = permuteColumns(w, out, k, perm);
            h = permuteSymmetric(h, k, perm);
        }
        double[] hinv = upperCholeskyOfInverse(h, k, opt.dampPercent());

        byte[] q = new byte[out * k];
        int bs = opt.blockSize();
        double[] w1 = new double[out * bs];
        double[] err = new double[out * bs];
        for (int i1 = 0; i1 < k; i1 += bs) {
            int i2 = Math.min(i1 + bs, k);
            int count = i2 - i1;
            for (int r = 0; r < out; r++) {
                System.arraycopy(w, r * k + i1, w1, r * bs, count);
            }
            for (int i = 0; i < count; i++) {
                int col = i1 + i;
                int orig = perm[col];
                int grp = orig / g;
                if (!staticParams && col % g == 0) {
                    for (int r = 0; r < out; r++) {
                        params[r * groups + grp] = fitCurrent(w, w1, r, k, bs, i1, i2, col, Math.min(k, col + g), spec);
                    }
                }
                double d = hinv[col * k + col];
                for (int r = 0; r < out; r++) {
                    GroupQuantizer.Params p = params[r * groups + grp];
                    double value = w1[r * bs + i];
                    int qi = GroupQuantizer.quantize((float) value, p, spec);
                    q[r * k + orig] = (byte) qi;
                    double e = (value - GroupQuantizer.dequantize(qi, p)) / d;
                    err[r * bs + i] = e;
                    for (int j = i + 1; j < count; j++) {
                        w1[r * bs + j] -= e * hinv[col * k + i1 + j];
                    }
                }
            }
            for (int r = 0; r < out; r++) {
                for (int c = i2; c < k; c++) {
                    double s = 0;
                    for (int i = 0; i < count; i++) {
                        s += err[r * bs + i] * hinv[(i1 + i) * k + c];
                    }
                    w[r * k + c] -= s;
                }
            }
        }
        float[] scales = new float[out * groups];
        byte[] zeros = spec.symmetric() ? null : new byte[out * groups];
        for (int i = 0; i < params.length; i++) {
            scales[i] = params[i].scale();
            if (zeros != null) {
                zeros[i] = (byte) params[i].zero();
            }
        }
        return new QuantizedLinear(out, k, spec, q, scales, zeros);
    }

    private static GroupQuantizer.Params fit(double[] w, int r, int k, int from, int to, QuantSpec spec) {
        float min = Float.POSITIVE_INFINITY;
        float max = Float.NEGATIVE_INFINITY;
        for (int c = from; c < to; c++) {
            float v = (float) w[r * k + c];
            min = Math.min(min, v);
            max = Math.max(max, v);
        }
        return GroupQuantizer.fit(min, max, spec);
    }

    /** Fits a group from the columns' current values: inside the block from the working copy, beyond it from W. */
    private static GroupQuantizer.Params fitCurrent(double[] w, double[] w1, int r, int k, int bs, int i1, int i2,
                                                    int from, int to, QuantSpec spec) {
        float min = Float.POSITIVE_INFINITY;
        float max = Float.NEGATIVE_INFINITY;
        for (int c = from; c < to; c++) {
            float v = (float) (c < i2 ? w1[r * bs + c - i1] : w[r * k + c]);
            min = Math.min(min, v);
            max = Math.max(max, v);
        }
        return GroupQuantizer.fit(min, max, spec);
    }

    private static double[] permuteColumns(double[] w, int rows, int k, int[] perm) {
        double[] out = new double[w.length];
        for (int r = 0; r < rows; r++) {
            for (int c = 0; c < k; c++) {
                out[r * k + c] = w[r * k + perm[c]];
            }
        }
        return out;
    }

    private static double[] permuteSymmetric(double[] h, int k, int[] perm) {
        double[] out = new double[h.length];
        for (int i = 0; i < k; i++) {
            for (int j = 0; j < k; j++) {
                out[i * k + j] = h[perm[i] * k + perm[j]];
            }
        }
        return out;
    }

    /** Upper Cholesky factor U of (H + damp·I)⁻¹ (Uᵀ U = H⁻¹), raising the dampening until H is positive definite. */
    static double[] upperCholeskyOfInverse(double[] h, int k, double dampPercent) {
        double mean = 0;
        for (int i = 0; i < k; i++) {
            mean += h[i * k + i];
        }
        mean /= k;
        double damp = dampPercent * mean;
        for (int attempt = 0; attempt < 8; attempt++) {
            double[] a = h.clone();
            for (int i = 0; i < k; i++) {
                a[i * k + i] += damp;
            }
            double[] l = cholesky(a, k);
            if (l != null) {
                double[] inv = inverseFromCholesky(l, k);
                double[] l2 = cholesky(inv, k);
                if (l2 != null) {
                    double[] u = new double[k * k];
                    for (int i = 0; i < k; i++) {
                        for (int j = 0; j <= i; j++) {
                            u[j * k + i] = l2[i * k + j];
                        }
                    }
                    return u;
                }
            }
            damp = damp == 0 ? 1e-6 : damp * 10;
        }
        throw new QuantizationException("GPTQ: the Hessian is not positive definite even with dampening "
                + damp + "; the calibration data may be too small or degenerate for this layer");
    }

    /** Lower Cholesky factor of a symmetric matrix, or null when it is not positive definite. */
    static double[] cholesky(double[] a, int n) {
        double[] l = new double[n * n];
        for (int i = 0; i < n; i++) {
            for (int j = 0; j <= i; j++) {
                double s = a[i * n + j];
                for (int p = 0; p < j; p++) {
                    s -= l[i * n + p] * l[j * n + p];
                }
                if (i == j) {
                    if (!(s > 0)) {
                        return null;
                    }
                    l[i * n + i] = Math.sqrt(s);
                } else {
                    l[i * n + j] = s / l[j * n + j];
                }
            }
        }
        return l;
    }

    /** A⁻¹ = L⁻ᵀ L⁻¹ from A's lower Cholesky factor. */
    static double[] inverseFromCholesky(double[] l, int n) {
        double[] linv = new double[n * n];
        for (int i = 0; i < n; i++) {
            linv[i * n + i] = 1 / l[i * n + i];
            for (int j = 0; j < i; j++) {
                double s = 0;
                for (int p = j; p < i; p++) {
                    s -= l[i * n + p] * linv[p * n + j];
                }
                linv[i * n + j] = s / l[i * n + i];
            }
        }
        double[] inv = new double[n * n];
        for (int i = 0; i < n; i++) {
            for (int j = 0; j <= i; j++) {
                double s = 0;
                for (int p = i; p < n; p++) {
                    s += linv[p * n + i] * linv[p * n + j];
                }
                inv[i * n + j] = s;
                inv[j * n + i] = s;
            }
        }
        return inv;
    }

}
