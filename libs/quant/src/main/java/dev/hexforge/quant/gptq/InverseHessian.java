package dev.hexforge.quant.gptq;

import dev.hexforge.kernels.Kernels;
import dev.hexforge.quant.QuantizationException;
import jdk.incubator.vector.DoubleVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * The upper Cholesky factor U of {@code (H + damp·I)⁻¹} ({@code Uᵀ U = H⁻¹}) that GPTQ walks column by column.
 *
 * <p>One factorisation and one triangular inverse: with P the order-reversing permutation and {@code P A P = L Lᵀ},
 * {@code A = R Rᵀ} with {@code R = P L P} upper triangular, so {@code A⁻¹ = (R⁻¹)ᵀ R⁻¹} and {@code U = R⁻¹ = P L⁻¹ P}.
 * Both steps go row by row over blocks of rows, so each earlier row is read once per block rather than once per row;
 * the inner products and updates run on SIMD lanes, the rows of a block on every core.
 */
final class InverseHessian {
    private static final VectorSpecies<Double> D = DoubleVector.SPECIES_PREFERRED;
    private static final int BLOCK = 128;
    private static final int MAX_ATTEMPTS = 8;

    private InverseHessian() {
    }

    /** U for {@code hessian} [k, k], raising the dampening (a fraction of the mean diagonal) until H is positive definite. */
    static double[] upperCholeskyOfInverse(double[] hessian, int k, double dampPercent) {
        double mean = 0;
        for (int i = 0; i < k; i++) {
            mean += hessian[i * k + i];
        }
        mean /= k;
        double damp = dampPercent * mean;
        for (int attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
            double[] a = new double[k * k];
            for (int i = 0; i < k; i++) {
                for (int j = 0; j <= i; j++) {
                    a[i * k + j] = hessian[(k - 1 - i) * k + (k - 1 - j)];
                }
                a[i * k + i] += damp;
            }
            if (choleskyInPlace(a, k)) {
                double[] linv = lowerInverse(a, k);
                double[] u = a;
                java.util.Arrays.fill(u, 0);
                for (int i = 0; i < k; i++) {
                    for (int j = i; j < k; j++) {
                        u[i * k + j] = linv[(k - 1 - i) * k + (k - 1 - j)];
                    }
                }
                return u;
            }
            damp = damp == 0 ? 1e-6 : damp * 10;
        }
        throw new QuantizationException("GPTQ: the Hessian is not positive definite even with dampening "
                + damp + "; the calibration data may be too small or degenerate for this layer");
    }

    /**
     * Overwrites the lower triangle of the symmetric {@code a} (only its lower triangle is read) with its Cholesky
     * factor L; false when {@code a} is not positive definite.
     */
    static boolean choleskyInPlace(double[] a, int n) {
        for (int b0 = 0; b0 < n; b0 += BLOCK) {
            int start = b0;
            int end = Math.min(n, b0 + BLOCK);
            // columns left of the block: every finished row j is read once for all rows of the block
            // one part of the block's rows per core: each part streams every finished row once, so more parts
            // would only read the factor again (this step is bound by memory, not arithmetic)
            int cores = Kernels.sharedFloat32().threads();
            int rows = end - start;
            Kernels.sharedFloat32().forRows(cores, (long) rows * start * start / 2 / cores, (partFrom, partTo) -> {
                int from = rows * partFrom / cores / 4 * 4;
                int to = partTo == cores ? rows : rows * partTo / cores / 4 * 4;
                int quads = start + from + (to - from) / 4 * 4;
                for (int j = 0; j < start; j++) {
                    double ljj = a[j * n + j];
                    for (int i = start + from; i < quads; i += 4) {
                        solveFour(a, n, i, j, ljj);
                    }
                    for (int i = quads; i < start + to; i++) {
                        a[i * n + j] = (a[i * n + j] - dot(a, i * n, a, j * n, j)) / ljj;
                    }
                }
            });
            for (int j = start; j < end; j++) {
                double s = a[j * n + j] - dot(a, j * n, a, j * n, j);
                if (!(s > 0)) {
                    return false;
                }
                double ljj = Math.sqrt(s);
                a[j * n + j] = ljj;
                for (int i = j + 1; i < end; i++) {
                    a[i * n + j] = (a[i * n + j] - dot(a, i * n, a, j * n, j)) / ljj;
                }
            }
        }
        for (int i = 0; i < n; i++) {
            java.util.Arrays.fill(a, i * n + i + 1, (i + 1) * n, 0);
        }
        return true;
    }

    /** L⁻¹ of a lower triangular L, row by row: {@code row_i(L⁻¹) = (e_i − Σ_{p<i} L[i][p] row_p(L⁻¹)) / L[i][i]}. */
    static double[] lowerInverse(double[] l, int n) {
        double[] inv = new double[n * n];
        for (int b0 = 0; b0 < n; b0 += BLOCK) {
            int start = b0;
            int end = Math.min(n, b0 + BLOCK);
            // the block's rows from every finished row, split by column panels: each panel is read once per block
            Kernels.sharedFloat32().forRows(DoubleTiles.panels(start), (long) (end - start) * start * 16,
                    (from, to) -> DoubleTiles.subtractTriangularPanels(l, inv, n, start, start, end, from, to));
            for (int p = start; p < end; p++) {
                double d = 1 / l[p * n + p];
                for (int j = 0; j < p; j++) {
                    inv[p * n + j] *= d;
                }
                inv[p * n + p] = d;
                for (int i = p + 1; i < end; i++) {
                    axpy(-l[i * n + p], inv, p * n, inv, i * n, p + 1);
                }
            }
        }
        return inv;
    }

    /**
     * {@code a[r][j] = (a[r][j] - dot(row r, row j, j)) / ljj} for the rows r = i..i+3: four independent sums at
     * once (one sum's FMAs wait on each other's latency), each formed exactly as {@link #dot} forms it.
     */
    private static void solveFour(double[] a, int n, int i, int j, double ljj) {
        int r0 = i * n;
        int r1 = r0 + n;
        int r2 = r1 + n;
        int r3 = r2 + n;
        int rj = j * n;
        int bound = D.loopBound(j);
        DoubleVector s0 = DoubleVector.zero(D);
        DoubleVector s1 = s0;
        DoubleVector s2 = s0;
        DoubleVector s3 = s0;
        for (int p = 0; p < bound; p += D.length()) {
            DoubleVector x = DoubleVector.fromArray(D, a, rj + p);
            s0 = DoubleVector.fromArray(D, a, r0 + p).fma(x, s0);
            s1 = DoubleVector.fromArray(D, a, r1 + p).fma(x, s1);
            s2 = DoubleVector.fromArray(D, a, r2 + p).fma(x, s2);
            s3 = DoubleVector.fromArray(D, a, r3 + p).fma(x, s3);
        }
        a[r0 + j] = (a[r0 + j] - tail(s0.reduceLanes(VectorOperators.ADD), a, r0, a, rj, bound, j)) / ljj;
        a[r1 + j] = (a[r1 + j] - tail(s1.reduceLanes(VectorOperators.ADD), a, r1, a, rj, bound, j)) / ljj;
        a[r2 + j] = (a[r2 + j] - tail(s2.reduceLanes(VectorOperators.ADD), a, r2, a, rj, bound, j)) / ljj;
        a[r3 + j] = (a[r3 + j] - tail(s3.reduceLanes(VectorOperators.ADD), a, r3, a, rj, bound, j)) / ljj;
    }

    /** {@code s} plus the products past the vector loop's bound, one at a time, as {@link #dot} ends. */
    private static double tail(double s, double[] a, int aOff, double[] b, int bOff, int from, int n) {
        for (int p = from; p < n; p++) {
            s += a[aOff + p] * b[bOff + p];
        }
        return s;
    }

    static double dot(double[] a, int aOff, double[] b, int bOff, int n) {
        int bound = D.loopBound(n);
        DoubleVector acc = DoubleVector.zero(D);
        for (int i = 0; i < bound; i += D.length()) {
            acc = DoubleVector.fromArray(D, a, aOff + i).fma(DoubleVector.fromArray(D, b, bOff + i), acc);
        }
        return tail(acc.reduceLanes(VectorOperators.ADD), a, aOff, b, bOff, bound, n);
    }

    /** {@code y[i] += alpha · x[i]} over n values. */
    static void axpy(double alpha, double[] x, int xOff, double[] y, int yOff, int n) {
        if (alpha == 0) {
            return;
        }
        int bound = D.loopBound(n);
        DoubleVector va = DoubleVector.broadcast(D, alpha);
        int i = 0;
        for (; i < bound; i += D.length()) {
            DoubleVector.fromArray(D, x, xOff + i).fma(va, DoubleVector.fromArray(D, y, yOff + i)).intoArray(y, yOff + i);
        }
        for (; i < n; i++) {
            y[yOff + i] += alpha * x[xOff + i];
        }
    }
}
