package dev.hexforge.quant.gptq;

import dev.hexforge.quant.QuantizationException;
import org.junit.jupiter.api.Test;

import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class InverseHessianTest {

    /** A random symmetric positive semi-definite XᵀX of rank min(rows, k). */
    private static double[] gram(int k, int rows, long seed) {
        SplittableRandom r = new SplittableRandom(seed);
        double[] x = new double[rows * k];
        for (int i = 0; i < x.length; i++) {
            x[i] = r.nextGaussian();
        }
        double[] h = new double[k * k];
        for (int t = 0; t < rows; t++) {
            for (int i = 0; i < k; i++) {
                for (int j = 0; j < k; j++) {
                    h[i * k + j] += x[t * k + i] * x[t * k + j];
                }
            }
        }
        return h;
    }

    /** Largest |(Uᵀ U (H + damp·I)) − I| entry. */
    private static double inverseResidual(double[] u, double[] h, int k, double damp) {
        double[] uu = new double[k * k];
        for (int i = 0; i < k; i++) {
            for (int j = 0; j < k; j++) {
                double s = 0;
                for (int p = 0; p <= Math.min(i, j); p++) {
                    s += u[p * k + i] * u[p * k + j];
                }
                uu[i * k + j] = s;
            }
        }
        double worst = 0;
        for (int i = 0; i < k; i++) {
            for (int j = 0; j < k; j++) {
                double s = 0;
                for (int p = 0; p < k; p++) {
                    s += uu[i * k + p] * (h[p * k + j] + (p == j ? damp : 0));
                }
                worst = Math.max(worst, Math.abs(s - (i == j ? 1 : 0)));
            }
        }
        return worst;
    }

    private static double meanDiagonal(double[] h, int k) {
        double m = 0;
        for (int i = 0; i < k; i++) {
            m += h[i * k + i];
        }
        return m / k;
    }

    @Test
    void upperFactorOfTheInverseOverSeveralBlocks() {
        int k = 150; // more than two blocks of rows, and not a multiple of the SIMD width
        double[] h = gram(k, 400, 1);
        double[] u = InverseHessian.upperCholeskyOfInverse(h, k, 0.01);
        for (int i = 0; i < k; i++) {
            assertTrue(u[i * k + i] > 0, "positive diagonal at " + i);
            for (int j = 0; j < i; j++) {
                assertEquals(0.0, u[i * k + j], "below the diagonal at " + i + "," + j);
            }
        }
        double residual = inverseResidual(u, h, k, 0.01 * meanDiagonal(h, k));
        assertTrue(residual < 1e-9, "Uᵀ U (H + damp I) differs from I by " + residual);
    }

    @Test
    void choleskyFactorOverSeveralBlocksReproducesTheMatrix() {
        int k = 300; // three blocks of 128 columns, a trailing update of more than one 64-row piece, a ragged last one
        double[] h = gram(k, 500, 3);
        double[] l = h.clone();
        assertTrue(InverseHessian.choleskyInPlace(l, k));
        double worst = 0;
        for (int i = 0; i < k; i++) {
            for (int j = 0; j < k; j++) {
                if (j > i) {
                    assertEquals(0.0, l[i * k + j], "above the diagonal at " + i + "," + j);
                    continue;
                }
                double s = 0;
                for (int p = 0; p <= j; p++) {
                    s += l[i * k + p] * l[j * k + p];
                }
                worst = Math.max(worst, Math.abs(s - h[i * k + j]) / meanDiagonal(h, k));
            }
        }
        assertTrue(worst < 1e-12, "L Lᵀ differs from H by " + worst + " of the mean diagonal");
    }

    @Test
    void dampeningRisesUntilASingularHessianFactors() {
        int k = 40;
        double[] h = gram(k, 10, 2); // rank 10 of 40: no Cholesky without dampening
        assertTrue(!InverseHessian.choleskyInPlace(h.clone(), k));
        double[] u = InverseHessian.upperCholeskyOfInverse(h, k, 0.0);
        assertTrue(inverseResidual(u, h, k, 1e-6) < 1e-6, "the first raise (1e-6) factors it");
    }

    @Test
    void aHessianThatNoDampeningFixesIsRefusedWithTheReason() {
        int k = 8;
        double[] h = new double[k * k];
        h[0] = Double.NaN;
        QuantizationException e = assertThrows(QuantizationException.class,
                () -> InverseHessian.upperCholeskyOfInverse(h, k, 0.01));
        assertTrue(e.getMessage().contains("not positive definite"), e.getMessage());
    }
}
