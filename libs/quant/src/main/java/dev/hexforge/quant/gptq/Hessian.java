package dev.hexforge.quant.gptq;

import dev.hexforge.kernels.Kernels;

/**
 * {@code H = (2 / n) Σ x xᵀ} over the calibration rows a linear sees. Rows are gathered into blocks whose product
 * {@code Xᵀ X} runs on the float32 GEMM kernels (its upper triangle only: H is symmetric); each block's sum is then
 * added into a double accumulator, so rounding grows with the block (at most {@value #BLOCK_ROWS} rows), not with the
 * whole calibration set.
 */
public final class Hessian {
    static final int BLOCK_ROWS = 256;
    private final int k;
    private final double[] h;
    private final float[] block;
    private final float[] transposed;
    /** A block of rows past the first, copied to the start of an array as the product reads it. */
    private final float[] rowsBuffer;
    private int pending;
    private long rows;
    private long flops;

    public Hessian(int k) {
        this.k = k;
        this.h = new double[k * k];
        this.block = new float[k * k];
        this.transposed = new float[k * BLOCK_ROWS];
        this.rowsBuffer = new float[k * BLOCK_ROWS];
    }

    /** Adds rows of x [count, k]. */
    public void add(float[] x, int count) {
        if (x.length < (long) count * k) {
            throw new IllegalArgumentException("x has " + x.length + " values, expected " + count + " x " + k);
        }
        Kernels<float[]> kernels = Kernels.sharedFloat32();
        for (int from = 0; from < count; from += BLOCK_ROWS) {
            int n = Math.min(BLOCK_ROWS, count - from);
            float[] rowsOfBlock = x;
            if (from > 0) {
                System.arraycopy(x, from * k, rowsBuffer, 0, n * k);
                rowsOfBlock = rowsBuffer;
            }
            kernels.transposeInto(rowsOfBlock, n, k, transposed);
            // block[k, k] += Xᵀ[k, n] · X[n, k], on and above the diagonal (H is symmetric); the first product after
            // a flush overwrites the block instead of adding to zeros (the same values: each sum starts at its first term)
            kernels.matmulNNUpper(transposed, rowsOfBlock, block, k, n, pending > 0);
            flops += (long) n * k * (k + 1);
            pending += n;
            if (pending >= BLOCK_ROWS) {
                flush();
            }
        }
        rows += count;
    }

    /** Adds the block's upper triangle (all that is read) to the accumulator; the next product overwrites the block. */
    private void flush() {
        Kernels.sharedFloat32().forRows(k, k / 2 + 1, (from, to) -> {
            for (int i = from; i < to; i++) {
                for (int j = i * k + i; j < (i + 1) * k; j++) {
                    h[j] += block[j];
                }
            }
        });
        pending = 0;
    }

    /** Floating-point operations of the products so far: 2 · rows · k(k + 1)/2, the upper triangle's. */
    public long flops() {
        return flops;
    }

    public long rows() {
        return rows;
    }

    /** The finished, symmetric matrix [k, k]. */
    public double[] matrix() {
        if (pending > 0) {
            flush();
        }
        double[] out = new double[k * k];
        double f = rows == 0 ? 0 : 2.0 / rows;
        Kernels.sharedFloat32().forRows(k, k / 2 + 1, (from, to) -> {
            for (int i = from; i < to; i++) {
                for (int j = i; j < k; j++) {
                    double v = h[i * k + j] * f;
                    out[i * k + j] = v;
                    out[j * k + i] = v;
                }
            }
        });
        return out;
    }

    /**
     * The calibration output error of replacing W by W', up to the constant 2/n: {@code Σ_rows δ H δᵀ}, δ = W − W'.
     * {@code δ·H} runs on the float32 GEMM with {@code hf} = H as float32 (a report figure: float rounding is far
     * below the differences it shows); the final sum is in double.
     */
    public static double outputError(float[] w, float[] wq, int out, int in, float[] hf) {
        float[] d = new float[out * in];
        for (int i = 0; i < d.length; i++) {
            d[i] = w[i] - wq[i];
        }
        float[] dh = new float[out * in];
        Kernels.sharedFloat32().matmulNN(d, hf, dh, out, in, in, false);
        double total = 0;
        for (int i = 0; i < d.length; i++) {
            total += (double) d[i] * dh[i];
        }
        return total;
    }
}
