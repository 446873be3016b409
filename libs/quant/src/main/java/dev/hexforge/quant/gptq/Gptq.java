package dev.hexforge.quant.gptq;

import dev.hexforge.kernels.Kernels;
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
        public Options withActOrder(boolean order) {
            return new Options(blockSize, dampPercent, order);
        }

        public static Options defaults() {
            return new Options(128, 0.01, false);
        }
    }

    private Gptq() {
    }

    /**
     * What GPTQ derives from a Hessian alone, shared by the linears that see the same inputs (q, k and v; gate and
     * up): the columns no calibration input reached, the column order, and the upper Cholesky factor of the inverse.
     */
    public record Prepared(int k, boolean[] dead, int[] perm, double[] hinv) {
    }

    /** Reads {@code hessian} without changing it; copies it only when some inputs are dead (a copy is k × k doubles). */
    public static Prepared prepare(double[] hessian, int k, Options opt) {
        double[] h = hessian;
        boolean[] dead = new boolean[k];
        for (int j = 0; j < k; j++) {
            if (hessian[j * k + j] == 0) {
                if (h == hessian) {
                    h = hessian.clone();
                }
                h[j * k + j] = 1;
                dead[j] = true;
            }
        }
        int[] perm = IntStream.range(0, k).toArray();
        if (opt.actOrder()) {
            double[] hh = h;
            perm = IntStream.range(0, k).boxed().sorted(Comparator.comparingDouble((Integer j) -> -hh[j * k + j]))
                    .mapToInt(Integer::intValue).toArray();
            h = permuteSymmetric(h, k, perm);
        }
        return new Prepared(k, dead, perm, InverseHessian.upperCholeskyOfInverse(h, k, opt.dampPercent()));
    }

    public static QuantizedLinear quantize(float[] weight, int out, int in, double[] hessian, QuantSpec spec, Options opt) {
        return quantize(weight, out, in, prepare(hessian, in, opt), spec, opt);
    }

    /** As the other, with what {@link #prepare} made of the Hessian of this linear's inputs. */
    public static QuantizedLinear quantize(float[] weight, int out, int in, Prepared prepared, QuantSpec spec, Options opt) {
        int k = in;
        if (prepared.k() != k) {
            throw new IllegalArgumentException("a Hessian for " + prepared.k() + " inputs given to a linear with " + k);
        }
        double[] w = new double[out * k];
        for (int i = 0; i < w.length; i++) {
            w[i] = weight[i];
        }
        for (int j = 0; j < k; j++) {
            if (prepared.dead()[j]) {
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
        int[] perm = prepared.perm();
        if (opt.actOrder()) {
            w = permuteColumns(w, out, k, perm);
        }
        double[] hinv = prepared.hinv();

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
            // the block's columns in turn; rows are independent, so they run on every core
            double[] wNow = w;
            int[] order = perm;
            int start = i1;
            Kernels.sharedFloat32().forRows(out, (long) count * count, (from, to) -> {
                for (int i = 0; i < count; i++) {
                    int col = start + i;
                    int orig = order[col];
                    int grp = orig / g;
                    if (!staticParams && col % g == 0) {
                        for (int r = from; r < to; r++) {
                            params[r * groups + grp] = fitCurrent(wNow, w1, r, k, bs, start, i2, col, Math.min(k, col + g), spec);
                        }
                    }
                    double d = hinv[col * k + col];
                    for (int r = from; r < to; r++) {
                        GroupQuantizer.Params p = params[r * groups + grp];
                        double value = w1[r * bs + i];
                        int qi = GroupQuantizer.quantize((float) value, p, spec);
                        q[r * k + orig] = (byte) qi;
                        double e = (value - GroupQuantizer.dequantize(qi, p)) / d;
                        err[r * bs + i] = e;
                        InverseHessian.axpy(-e, hinv, col * k + col + 1, w1, r * bs + i + 1, count - i - 1);
                    }
                }
            });
            // lazy batch update of the columns right of the block: W[:, i2:] -= Err · Hinv[i1:i2, i2:]
            double[] wRef = w;
            int first = i1;
            Kernels.sharedFloat32().forRows(out, (long) count * (k - i2), (from, to) ->
                    DoubleTiles.subtractProducts(err, bs, count, hinv, first * k + i2, k, wRef, i2, k, k - i2, from, to));
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
}
