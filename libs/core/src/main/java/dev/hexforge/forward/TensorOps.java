package dev.hexforge.forward;

/**
 * The few kernels the reference forward needs. A plain scalar version and a SIMD version implement it; both
 * accumulate in float32 and must agree within float rounding.
 */
public interface TensorOps {

    float dot(float[] a, int aOff, float[] b, int bOff, int n);

    /** {@code y[yOff + r] = dot(w[r * cols ..], x[xOff ..])} for r in [0, rows). */
    default void matVec(float[] w, int rows, int cols, float[] x, int xOff, float[] y, int yOff) {
        for (int r = 0; r < rows; r++) {
            y[yOff + r] = dot(w, r * cols, x, xOff, cols);
        }
    }

    /** {@code y[i] += a * x[i]} over n elements. */
    default void axpy(float a, float[] x, int xOff, float[] y, int yOff, int n) {
        for (int i = 0; i < n; i++) {
            y[yOff + i] += a * x[xOff + i];
        }
    }

    String name();

    /** The fastest implementation this JVM can run: SIMD when jdk.incubator.vector is available. */
    static TensorOps best() {
        return VectorOpsLoader.load();
    }
}
