package dev.hexforge.kernels;

import java.util.concurrent.ForkJoinPool;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Dense numeric primitives over one array type: {@code float[]} for training and calibration, {@code double[]} for
 * the finite-difference gradient check. The matrix products here are the naive loops; {@link VectorFloatKernels}
 * overrides them with SIMD tiles. Rows of large products are split across {@code threads} workers; each row is
 * computed by one worker in a fixed order, so results do not depend on the thread count.
 *
 * @param <A> the array type
 */
public abstract class Kernels<A> implements AutoCloseable {
    private static final long PARALLEL_WORK = 1 << 16;
    private final int threads;
    private final ForkJoinPool pool;

    protected Kernels(int threads) {
        if (threads < 1) {
            throw new IllegalArgumentException("threads must be >= 1, got " + threads);
        }
        this.threads = threads;
        this.pool = threads > 1 ? new ForkJoinPool(threads) : null;
    }

    /** Float32 with SIMD when the JVM has jdk.incubator.vector, else plain loops. */
    public static Kernels<float[]> float32(int threads) {
        if (ModuleLayer.boot().findModule("jdk.incubator.vector").isPresent()) {
            try {
                return new VectorFloatKernels(threads);
            } catch (LinkageError e) {
                return new FloatKernels(threads);
            }
        }
        return new FloatKernels(threads);
    }

    /** Float32 kernels over every core, shared by callers that do not manage their own workers (daemon threads). */
    public static Kernels<float[]> sharedFloat32() {
        return Shared.FLOAT32;
    }

    private static final class Shared {
        static final Kernels<float[]> FLOAT32 = float32(Runtime.getRuntime().availableProcessors());
    }

    public static Kernels<double[]> float64() {
        return new DoubleKernels(1);
    }

    public int threads() {
        return threads;
    }

    public abstract String name();

    public abstract A alloc(int n);

    /** Frozen float32 weights in this precision (the same array for float32). */
    public abstract A of(float[] values);

    public abstract float[] toFloats(A a);

    public abstract int length(A a);

    public abstract double get(A a, int i);

    public abstract void set(A a, int i, double v);

    public abstract void fill(A a, double v);

    public abstract A copy(A a);

    public abstract double dot(A a, int aOff, A b, int bOff, int n);

    /** {@code y[yOff + i] += alpha * x[xOff + i]}. */
    public abstract void axpy(double alpha, A x, int xOff, A y, int yOff, int n);

    public void add(A a, int i, double v) {
        set(a, i, get(a, i) + v);
    }

    /** Copies n values. */
    public void copy(A src, int srcOff, A dst, int dstOff, int n) {
        for (int i = 0; i < n; i++) {
            set(dst, dstOff + i, get(src, srcOff + i));
        }
    }

    /** The [rows, cols] matrix transposed into a new [cols, rows] one. */
    public A transpose(A m, int rows, int cols) {
        A out = alloc(rows * cols);
        transposeInto(m, rows, cols, out);
        return out;
    }

    /** The [rows, cols] matrix transposed into the first rows·cols values of {@code out}. */
    public void transposeInto(A m, int rows, int cols, A out) {
        for (int i = 0; i < rows; i++) {
            for (int j = 0; j < cols; j++) {
                set(out, j * rows + i, get(m, i * cols + j));
            }
        }
    }

    /** {@code out[i] = a[i] · b[i]} over n values. */
    public void multiply(A a, int aOff, A b, int bOff, A out, int outOff, int n) {
        for (int i = 0; i < n; i++) {
            set(out, outOff + i, get(a, aOff + i) * get(b, bOff + i));
        }
    }

    /**
     * One row of RMSNorm: {@code out = w ⊙ x · r} with {@code r = (mean(x²) + eps)^-½}; returns r.
     */
    public double rmsNormRow(A x, int off, A w, A out, int n, double eps) {
        double r = 1.0 / Math.sqrt(dot(x, off, x, off, n) / n + eps);
        for (int j = 0; j < n; j++) {
            set(out, off + j, get(w, j) * get(x, off + j) * r);
        }
        return r;
    }

    /** Backward of one RMSNorm row: {@code dx += r·w⊙dy − r³·(Σ w⊙dy⊙x)/n · x}. */
    public void rmsNormBackwardRow(A dy, A x, int off, A w, double r, A dx, int n) {
        double g = 0;
        for (int j = 0; j < n; j++) {
            g += get(w, j) * get(dy, off + j) * get(x, off + j);
        }
        double coef = r * r * r * g / n;
        for (int j = 0; j < n; j++) {
            add(dx, off + j, r * get(w, j) * get(dy, off + j) - coef * get(x, off + j));
        }
    }

    /**
     * Softmax backward of one causal attention row in place: {@code ds[j] = p[j]·(ds[j] − delta)·scale} for the
     * first {@code count} entries, 0 for the rest of the row of length n.
     */
    public void softmaxBackwardRow(A p, A ds, int off, int count, int n, double delta, double scale) {
        for (int j = 0; j < count; j++) {
            set(ds, off + j, get(p, off + j) * (get(ds, off + j) - delta) * scale);
        }
        for (int j = count; j < n; j++) {
            set(ds, off + j, 0);
        }
    }

    /** The largest of n values from {@code off}. */
    public double max(A x, int off, int n) {
        double m = Double.NEGATIVE_INFINITY;
        for (int i = 0; i < n; i++) {
            m = Math.max(m, get(x, off + i));
        }
        return m;
    }

    /** {@code x[i] = exp(x[i]·scale − shift)} over n values from {@code off}; returns their sum. */
    public double expInPlace(A x, int off, int n, double scale, double shift) {
        double sum = 0;
        for (int i = 0; i < n; i++) {
            double e = Math.exp(get(x, off + i) * scale - shift);
            set(x, off + i, e);
            sum += e;
        }
        return sum;
    }

    /** {@code x[i] *= s} over n values from {@code off}. */
    public void scale(A x, int off, int n, double s) {
        for (int i = 0; i < n; i++) {
            set(x, off + i, get(x, off + i) * s);
        }
    }

    /** {@code out = silu(gate) ⊙ up}, silu(g) = g·σ(g). */
    public void siluMul(A gate, A up, A out, int n) {
        for (int i = 0; i < n; i++) {
            double g = get(gate, i);
            set(out, i, g / (1 + Math.exp(-g)) * get(up, i));
        }
    }

    /**
     * Backward of {@link #siluMul}: overwrites {@code gate} with ∂/∂gate and {@code up} with ∂/∂up given the
     * gradient {@code dOut}.
     */
    public void siluMulBackward(A gate, A up, A dOut, int n) {
        for (int i = 0; i < n; i++) {
            double g = get(gate, i);
            double sg = 1 / (1 + Math.exp(-g));
            double d = get(dOut, i);
            double u = get(up, i);
            set(up, i, d * g * sg);
            set(gate, i, d * u * sg * (1 + g * (1 - sg)));
        }
    }

    /** {@code y[yOff + r] = w[r, ·] · x[xOff ..]} for r in [0, rows): one vector through a matrix, split by rows. */
    public void matVec(A w, int rows, int cols, A x, int xOff, A y, int yOff) {
        forRows(rows, cols, (from, to) -> {
            for (int r = from; r < to; r++) {
                set(y, yOff + r, dot(w, r * cols, x, xOff, cols));
            }
        });
    }

    /** {@code y[rows, out] (+)= x[rows, in] · w[out, in]ᵀ}. */
    public void matmulNT(A x, A w, A y, int rows, int in, int out, boolean accumulate) {
        forRows(rows, (long) in * out, (from, to) -> {
            for (int t = from; t < to; t++) {
                for (int o = 0; o < out; o++) {
                    double s = dot(x, t * in, w, o * in, in);
                    set(y, t * out + o, accumulate ? get(y, t * out + o) + s : s);
                }
            }
        });
    }

    /** {@code dx[rows, in] (+)= dy[rows, out] · w[out, in]}. */
    public void matmulNN(A dy, A w, A dx, int rows, int out, int in, boolean accumulate) {
        forRows(rows, (long) in * out, (from, to) -> {
            for (int t = from; t < to; t++) {
                if (!accumulate) {
                    for (int i = 0; i < in; i++) {
                        set(dx, t * in + i, 0);
                    }
                }
                for (int o = 0; o < out; o++) {
                    axpy(get(dy, t * out + o), w, o * in, dx, t * in, in);
                }
            }
        });
    }

    /**
     * {@code dx[n, in] = dy[n, n] · w[n, in]} for a triangular {@code dy} (lower: zero above the diagonal; else
     * zero below it), as attention's causal products are. Implementations may skip the zero half; the result is
     * the same as {@link #matmulNN}'s.
     */
    public void matmulNNTriangular(A dy, A w, A dx, int n, int in, boolean lower) {
        matmulNN(dy, w, dx, n, n, in, false);
    }

    /**
     * The entries on and above the diagonal of {@code dx[n, n] (+)= dy[n, out] · w[out, n]}, for a symmetric product
     * such as {@code XᵀX}: those are the same as {@link #matmulNN}'s; entries below the diagonal are unspecified
     * (implementations may skip them, or some of them), so callers read only the upper triangle.
     */
    public void matmulNNUpper(A dy, A w, A dx, int n, int out, boolean accumulate) {
        matmulNN(dy, w, dx, n, out, n, accumulate);
    }

    /**
     * {@code y[rows, w.rows] = x[rows, w.cols] · wᵀ} for a frozen weight (a linear's forward): every output is
     * exactly {@code dot(x row, w row)}, the value {@link #matVec} gives for that row, whatever the split.
     */
    public void matmulNT(A x, FrozenMatrix w, A y, int rows) {
        int in = w.cols();
        int out = w.rows();
        forRows(out, (long) in * rows, (from, to) -> {
            float[] row = new float[in];
            for (int o = from; o < to; o++) {
                w.rowInto(o, row, 0);
                A wo = of(row);
                for (int t = 0; t < rows; t++) {
                    set(y, t * out + o, dot(x, t * in, wo, 0, in));
                }
            }
        });
    }

    /**
     * {@code dx[rows, w.cols] (+)= dy[rows, w.rows] · w} for a frozen weight (a linear's input gradient). This plain
     * form works on a float32 copy of a bf16 weight; the vectorised provider widens it a block at a time.
     */
    public void matmulNN(A dy, FrozenMatrix w, A dx, int rows, boolean accumulate) {
        matmulNN(dy, of(w.toFloats()), dx, rows, w.rows(), w.cols(), accumulate);
    }

    /** Row {@code row} of a frozen matrix into {@code dst[off ..]} (an embedding lookup). */
    public void copyRow(FrozenMatrix w, int row, A dst, int off) {
        float[] r = new float[w.cols()];
        w.rowInto(row, r, 0);
        for (int j = 0; j < r.length; j++) {
            set(dst, off + j, r[j]);
        }
    }

    /** {@code g[out, in] += dy[rows, out]ᵀ · x[rows, in]}: the gradient of a weight (small, single-threaded). */
    public void matmulTN(A dy, A x, A g, int rows, int out, int in) {
        for (int t = 0; t < rows; t++) {
            for (int o = 0; o < out; o++) {
                double d = get(dy, t * out + o);
                if (d != 0) {
                    axpy(d, x, t * in, g, o * in, in);
                }
            }
        }
    }

    /** A body over a half-open range of rows. */
    @FunctionalInterface
    public interface RowRange {
        void run(int from, int to);
    }

    /** Runs {@code body} over [0, rows), split across the workers when there is enough work. */
    public void forRows(int rows, long workPerRow, RowRange body) {
        forRows(rows, workPerRow, 1, body);
    }

    /**
     * As {@link #forRows(int, long, RowRange)}, with every chunk but the last a multiple of {@code align} rows, so
     * kernels that work on tiles of rows leave no remainder rows mid-matrix.
     */
    protected void forRows(int rows, long workPerRow, int align, RowRange body) {
        if (pool == null || rows < 2 || rows * workPerRow < PARALLEL_WORK) {
            body.run(0, rows);
            return;
        }
        int chunks = Math.max(1, Math.min(rows / align, threads * 4));
        if (chunks == 1) {
            body.run(0, rows);
            return;
        }
        new Chunks(rows, chunks, align, body).run(pool, threads - 1);
    }

    /**
     * Chunks of rows taken in turn by the calling thread and by helpers from the pool. The caller starts at once
     * and works until none are left, then waits only for chunks already taken: a helper that wakes late finds
     * nothing to do, so a product never waits for a parked worker to start (costly on small VMs), and a caller
     * inside the pool cannot deadlock.
     */
    private static final class Chunks {
        private final int rows;
        private final int count;
        private final int align;
        private final RowRange body;
        private final AtomicInteger next = new AtomicInteger();
        private final AtomicInteger done = new AtomicInteger();
        private volatile Throwable failure;

        Chunks(int rows, int count, int align, RowRange body) {
            this.rows = rows;
            this.count = count;
            this.align = align;
            this.body = body;
        }

        void run(ForkJoinPool pool, int helpers) {
            for (int i = 0; i < helpers; i++) {
                pool.execute(this::work);
            }
            work();
            for (int spins = 0; done.get() < count; spins++) {
                if (spins < 1 << 12) {
                    Thread.onSpinWait();
                } else {
                    Thread.yield();
                }
            }
            Throwable t = failure;
            if (t instanceof RuntimeException e) {
                throw e;
            }
            if (t instanceof Error e) {
                throw e;
            }
        }

        private void work() {
            for (int c; (c = next.getAndIncrement()) < count; ) {
                try {
                    if (failure == null) {
                        int from = (int) ((long) rows * c / count) / align * align;
                        int to = c == count - 1 ? rows : (int) ((long) rows * (c + 1) / count) / align * align;
                        body.run(from, to);
                    }
                } catch (Throwable t) {
                    failure = t;
                } finally {
                    done.incrementAndGet();
                }
            }
        }
    }

    @Override
    public void close() {
        if (pool != null) {
            pool.shutdown();
        }
    }
}
