package dev.hexforge.quant.gptq;

import jdk.incubator.vector.DoubleVector;
import jdk.incubator.vector.VectorSpecies;

/**
 * The float64 products of GPTQ's inverse Hessian and lazy updates, in register tiles of 4 rows × 4 vectors: each
 * step loads 4 vectors of the right operand and broadcasts 4 values of the left one for 16 FMAs, where a row-by-row
 * axpy loaded and stored the output row for every term (bound by the cache, not the FMA units).
 *
 * <p>Every output element receives the same terms in the same order, each rounded as {@link InverseHessian#axpy}
 * rounds it (fused on the lanes the axpy's vector loop covers, multiply-then-add on its scalar tail), so the
 * results are the axpy form's to the bit (but for the sign of an exact zero: the axpy skips a zero coefficient).
 */
final class DoubleTiles {
    private static final VectorSpecies<Double> D = DoubleVector.SPECIES_PREFERRED;
    private static final int V = D.length();
    private static final int TILE_COLS = 4 * V;

    private DoubleTiles() {
    }

    /**
     * For rows r in [rowFrom, rowTo) and columns j in [0, n): {@code c[cOff + r·ldc + j] -= Σ_p a[r·lda + p] ·
     * b[bOff + p·ldb + j]} over p in [0, terms), in order of p — {@code axpy(-a[r][p], b row p, c row r, n)} for p
     * in turn. Column panels outside, row tiles inside: a panel of b (terms × 4 vectors) stays in cache for every
     * row tile.
     */
    static void subtractProducts(double[] a, int lda, int terms, double[] b, int bOff, int ldb, double[] c, int cOff,
                                 int ldc, int n, int rowFrom, int rowTo) {
        int vecEnd = D.loopBound(n);
        int tileEnd = vecEnd / TILE_COLS * TILE_COLS;
        int rowTiles = rowFrom + (rowTo - rowFrom) / 4 * 4;
        for (int j = 0; j < tileEnd; j += TILE_COLS) {
            for (int r = rowFrom; r < rowTiles; r += 4) {
                tile4x4(a, r * lda, lda, 0, terms, b, bOff + j, ldb, c, cOff + r * ldc + j, ldc);
            }
            for (int r = rowTiles; r < rowTo; r++) {
                for (int v = 0; v < TILE_COLS; v += V) {
                    oneVector(a, r * lda, 0, terms, b, bOff + j + v, ldb, c, cOff + r * ldc + j + v);
                }
            }
        }
        for (int r = rowFrom; r < rowTo; r++) {
            for (int j = tileEnd; j < vecEnd; j += V) {
                oneVector(a, r * lda, 0, terms, b, bOff + j, ldb, c, cOff + r * ldc + j);
            }
            for (int j = vecEnd; j < n; j++) {
                for (int p = 0; p < terms; p++) {
                    c[cOff + r * ldc + j] += -a[r * lda + p] * b[bOff + p * ldb + j];
                }
            }
        }
    }

    /**
     * For rows i in [rowFrom, rowTo) of the n × n row-major {@code inv} and the column panels [tileFrom, tileTo)
     * of 4 vectors' width: {@code inv[i][0..p] -= coef[i][p] · inv[p][0..p]} for p in [0, terms) in turn — the
     * terms of a lower-triangular inverse from rows already finished ({@code inv[p][j]} is zero for j > p), which
     * every panel can take independently. Column j receives the terms p ≥ j; the one from row p is fused when j
     * lies in the vector part of an axpy of length p + 1, else multiplied then added.
     */
    static void subtractTriangularPanels(double[] coef, double[] inv, int n, int terms, int rowFrom, int rowTo,
                                         int tileFrom, int tileTo) {
        int rowTiles = rowFrom + (rowTo - rowFrom) / 4 * 4;
        for (int tile = tileFrom; tile < tileTo; tile++) {
            int j0 = tile * TILE_COLS;
            int j1 = Math.min(terms, j0 + TILE_COLS);
            // the terms p < j1 reach only part of the panel's columns, some unfused: as the axpy did
            for (int p = j0; p < j1; p++) {
                int fused = D.loopBound(p + 1);
                for (int q = rowFrom; q < rowTo; q++) {
                    double alpha = -coef[q * n + p];
                    if (alpha == 0) {
                        continue;
                    }
                    for (int j = j0; j <= p; j++) {
                        int at = q * n + j;
                        inv[at] = j < fused ? Math.fma(inv[p * n + j], alpha, inv[at]) : inv[at] + alpha * inv[p * n + j];
                    }
                }
            }
            if (j1 - j0 < TILE_COLS || j1 == terms) {
                continue;
            }
            // the panel's rows lie n apart (a page or more each at GPTQ's sizes): packed once, contiguous, for
            // every row tile instead of a TLB miss per term per tile
            double[] panel = packed(terms - j1);
            for (int p = j1; p < terms; p++) {
                System.arraycopy(inv, p * n + j0, panel, (p - j1) * TILE_COLS, TILE_COLS);
            }
            int base = -j1 * TILE_COLS;
            for (int r = rowFrom; r < rowTiles; r += 4) {
                tile4x4(coef, r * n, n, j1, terms, panel, base, TILE_COLS, inv, r * n + j0, n);
            }
            for (int r = rowTiles; r < rowTo; r++) {
                for (int v = 0; v < TILE_COLS; v += V) {
                    oneVector(coef, r * n, j1, terms, panel, base + v, TILE_COLS, inv, r * n + j0 + v);
                }
            }
        }
    }

    private static final ThreadLocal<double[]> PANEL = ThreadLocal.withInitial(() -> new double[0]);

    /** This thread's panel buffer, for at least {@code rows} rows of 4 vectors. */
    private static double[] packed(int rows) {
        double[] buf = PANEL.get();
        if (buf.length < rows * TILE_COLS) {
            buf = new double[rows * TILE_COLS];
            PANEL.set(buf);
        }
        return buf;
    }

    /** Column panels of {@link #subtractTriangularPanels} over {@code columns} columns. */
    static int panels(int columns) {
        return (columns + TILE_COLS - 1) / TILE_COLS;
    }

    /** c[4 rows, 4V] at cOff (stride ldc) -= Σ_{p in [pFrom, pTo)} a[aOff + row·lda + p] · b[bOff + p·ldb ..], fused. */
    private static void tile4x4(double[] a, int aOff, int lda, int pFrom, int pTo, double[] b, int bOff, int ldb,
                                double[] c, int cOff, int ldc) {
        int c0 = cOff;
        int c1 = c0 + ldc;
        int c2 = c1 + ldc;
        int c3 = c2 + ldc;
        DoubleVector s00 = DoubleVector.fromArray(D, c, c0);
        DoubleVector s01 = DoubleVector.fromArray(D, c, c0 + V);
        DoubleVector s02 = DoubleVector.fromArray(D, c, c0 + 2 * V);
        DoubleVector s03 = DoubleVector.fromArray(D, c, c0 + 3 * V);
        DoubleVector s10 = DoubleVector.fromArray(D, c, c1);
        DoubleVector s11 = DoubleVector.fromArray(D, c, c1 + V);
        DoubleVector s12 = DoubleVector.fromArray(D, c, c1 + 2 * V);
        DoubleVector s13 = DoubleVector.fromArray(D, c, c1 + 3 * V);
        DoubleVector s20 = DoubleVector.fromArray(D, c, c2);
        DoubleVector s21 = DoubleVector.fromArray(D, c, c2 + V);
        DoubleVector s22 = DoubleVector.fromArray(D, c, c2 + 2 * V);
        DoubleVector s23 = DoubleVector.fromArray(D, c, c2 + 3 * V);
        DoubleVector s30 = DoubleVector.fromArray(D, c, c3);
        DoubleVector s31 = DoubleVector.fromArray(D, c, c3 + V);
        DoubleVector s32 = DoubleVector.fromArray(D, c, c3 + 2 * V);
        DoubleVector s33 = DoubleVector.fromArray(D, c, c3 + 3 * V);
        int a0 = aOff;
        int a1 = a0 + lda;
        int a2 = a1 + lda;
        int a3 = a2 + lda;
        for (int p = pFrom; p < pTo; p++) {
            int bp = bOff + p * ldb;
            DoubleVector b0 = DoubleVector.fromArray(D, b, bp);
            DoubleVector b1 = DoubleVector.fromArray(D, b, bp + V);
            DoubleVector b2 = DoubleVector.fromArray(D, b, bp + 2 * V);
            DoubleVector b3 = DoubleVector.fromArray(D, b, bp + 3 * V);
            DoubleVector x = DoubleVector.broadcast(D, -a[a0 + p]);
            s00 = b0.fma(x, s00);
            s01 = b1.fma(x, s01);
            s02 = b2.fma(x, s02);
            s03 = b3.fma(x, s03);
            x = DoubleVector.broadcast(D, -a[a1 + p]);
            s10 = b0.fma(x, s10);
            s11 = b1.fma(x, s11);
            s12 = b2.fma(x, s12);
            s13 = b3.fma(x, s13);
            x = DoubleVector.broadcast(D, -a[a2 + p]);
            s20 = b0.fma(x, s20);
            s21 = b1.fma(x, s21);
            s22 = b2.fma(x, s22);
            s23 = b3.fma(x, s23);
            x = DoubleVector.broadcast(D, -a[a3 + p]);
            s30 = b0.fma(x, s30);
            s31 = b1.fma(x, s31);
            s32 = b2.fma(x, s32);
            s33 = b3.fma(x, s33);
        }
        s00.intoArray(c, c0);
        s01.intoArray(c, c0 + V);
        s02.intoArray(c, c0 + 2 * V);
        s03.intoArray(c, c0 + 3 * V);
        s10.intoArray(c, c1);
        s11.intoArray(c, c1 + V);
        s12.intoArray(c, c1 + 2 * V);
        s13.intoArray(c, c1 + 3 * V);
        s20.intoArray(c, c2);
        s21.intoArray(c, c2 + V);
        s22.intoArray(c, c2 + 2 * V);
        s23.intoArray(c, c2 + 3 * V);
        s30.intoArray(c, c3);
        s31.intoArray(c, c3 + V);
        s32.intoArray(c, c3 + 2 * V);
        s33.intoArray(c, c3 + 3 * V);
    }

    private static void oneVector(double[] a, int aOff, int pFrom, int pTo, double[] b, int bOff, int ldb, double[] c,
                                  int cOff) {
        DoubleVector s = DoubleVector.fromArray(D, c, cOff);
        for (int p = pFrom; p < pTo; p++) {
            s = DoubleVector.fromArray(D, b, bOff + p * ldb).fma(DoubleVector.broadcast(D, -a[aOff + p]), s);
        }
        s.intoArray(c, cOff);
    }
}
