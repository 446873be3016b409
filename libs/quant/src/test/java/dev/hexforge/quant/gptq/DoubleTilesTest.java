package dev.hexforge.quant.gptq;

import org.junit.jupiter.api.Test;

import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

/** The tiled float64 products against the axpy loops they replace: the same bits, on shapes with every tail. */
class DoubleTilesTest {

    @Test
    void productsEqualTheAxpyFormToTheBit() {
        SplittableRandom rng = new SplittableRandom(3);
        // rows, terms, columns: tiles of 4 rows and 4 vectors with remainders of rows, vectors and lanes
        int[][] shapes = {{1, 1, 1}, {4, 3, 32}, {5, 7, 33}, {9, 128, 70}, {13, 17, 100}, {8, 128, 4736}};
        for (int[] s : shapes) {
            int rows = s[0];
            int terms = s[1];
            int n = s[2];
            int ldc = n + 5;
            double[] a = random(rng, rows * terms);
            double[] b = random(rng, terms * (n + 3));
            double[] c = random(rng, rows * ldc + 2);
            double[] expected = c.clone();
            for (int r = 0; r < rows; r++) {
                for (int p = 0; p < terms; p++) {
                    InverseHessian.axpy(-a[r * terms + p], b, 3 + p * (n + 3), expected, 2 + r * ldc, n);
                }
            }
            DoubleTiles.subtractProducts(a, terms, terms, b, 3, n + 3, c, 2, ldc, n, 0, rows);
            assertArrayEquals(expected, c, rows + "x" + terms + "x" + n);
        }
    }

    @Test
    void triangularPanelsEqualTheAxpyFormToTheBit() {
        SplittableRandom rng = new SplittableRandom(4);
        // n, the finished rows (terms), the rows updated: full and partial panels, row remainders
        int[][] cases = {{40, 1, 4}, {70, 33, 5}, {200, 64, 64}, {300, 131, 9}, {600, 256, 128}};
        for (int[] s : cases) {
            int n = s[0];
            int terms = s[1];
            int rows = s[2];
            double[] coef = random(rng, n * n);
            double[] inv = new double[n * n];
            for (int p = 0; p < terms + rows; p++) {
                for (int j = 0; j <= p && p < terms; j++) {
                    inv[p * n + j] = rng.nextDouble(-1, 1);
                }
            }
            double[] expected = inv.clone();
            for (int p = 0; p < terms; p++) {
                for (int i = terms; i < terms + rows; i++) {
                    InverseHessian.axpy(-coef[i * n + p], expected, p * n, expected, i * n, p + 1);
                }
            }
            DoubleTiles.subtractTriangularPanels(coef, inv, n, terms, terms, terms + rows, 0, DoubleTiles.panels(terms));
            assertArrayEquals(expected, inv, "n " + n + ", " + terms + " finished rows, " + rows + " rows");
        }
    }

    private static double[] random(SplittableRandom rng, int n) {
        double[] v = new double[n];
        for (int i = 0; i < n; i++) {
            v[i] = rng.nextDouble(0.1, 1) * (rng.nextBoolean() ? 1 : -1);
        }
        return v;
    }
}
