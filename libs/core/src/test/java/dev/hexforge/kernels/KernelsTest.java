package dev.hexforge.kernels;

import dev.hexforge.safetensors.FloatConversion;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.ShortBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The SIMD products against the plain loops, on shapes with every kind of tail (rows, columns, vector width). */
class KernelsTest {

    @Test
    void vectorProductsMatchThePlainLoops() {
        Kernels<float[]> fast = Kernels.float32(2);
        Kernels<float[]> plain = new FloatKernels(1);
        assertTrue(fast instanceof VectorFloatKernels, "the test JVM runs with the vector module");
        SplittableRandom rng = new SplittableRandom(1);
        // the last four span several blocks of weight rows (an LM head's shape, small; the last one in the NN product
        // too), with row and column tails
        int[][] shapes = {{1, 1, 1}, {3, 7, 5}, {16, 32, 32}, {17, 33, 35}, {64, 128, 8}, {8, 8, 128}, {130, 96, 70},
                {512, 128, 64}, {7, 40, 600}, {5, 33, 1030}, {27, 64, 2049}, {6, 40, 8500}};
        for (int[] s : shapes) {
            int rows = s[0];
            int in = s[1];
            int out = s[2];
            float[] x = random(rng, rows * in);
            float[] w = random(rng, out * in);
            float[] dy = random(rng, rows * out);
            for (boolean acc : new boolean[]{false, true}) {
                float[] seed = random(rng, rows * out);
                float[] a = seed.clone();
                float[] b = seed.clone();
                fast.matmulNT(x, w, a, rows, in, out, acc);
                plain.matmulNT(x, w, b, rows, in, out, acc);
                close(b, a, in, "NT " + rows + "x" + in + "x" + out + " acc " + acc);
                float[] seedIn = random(rng, rows * in);
                float[] c = seedIn.clone();
                float[] d = seedIn.clone();
                fast.matmulNN(dy, w, c, rows, out, in, acc);
                plain.matmulNN(dy, w, d, rows, out, in, acc);
                close(d, c, out, "NN " + rows + "x" + out + "x" + in + " acc " + acc);
            }
            float[] g1 = random(rng, out * in);
            float[] g2 = g1.clone();
            fast.matmulTN(dy, x, g1, rows, out, in);
            plain.matmulTN(dy, x, g2, rows, out, in);
            close(g2, g1, rows, "TN " + rows + "x" + out + "x" + in);
        }
        fast.close();
    }

    /**
     * Products over a frozen weight (split by w's rows or blocks of them instead of by x's rows), held as float32 or
     * as bf16: the plain loops' values; bf16 storage the same bits as float32 storage of the same values, in the
     * vectorised and the plain provider, whether the bits are in memory or read from a file at every use; the input
     * gradient bit for bit the float product's (the same FMA chain), on shapes the split takes (with row tails and
     * more than one block of w) and ones it leaves to the general product.
     */
    @Test
    void frozenProductsMatchThePlainLoopsInEveryStorage(@TempDir Path tmp)
            throws IOException {
        Kernels<float[]> fast = Kernels.float32(2);
        Kernels<float[]> plain = new FloatKernels(1);
        SplittableRandom rng = new SplittableRandom(7);
        int[][] shapes = {{1, 16, 4}, {3, 64, 8}, {5, 128, 64}, {17, 64, 2052}, {128, 192, 64}, {6, 33, 10}, {9, 70, 9}};
        for (int[] s : shapes) {
            int rows = s[0];
            int in = s[1];
            int out = s[2];
            short[] bits = new short[out * in];
            float[] w = new float[out * in];
            float[] r = random(rng, out * in);
            for (int i = 0; i < w.length; i++) {
                bits[i] = FloatConversion.floatToBf16(r[i]);
                w[i] = FloatConversion.bf16ToFloat(bits[i]);
            }
            FrozenMatrix asFloats = FrozenMatrix.of(w, out, in);
            FrozenMatrix inMemory = FrozenMatrix.ofBf16(ShortBuffer.wrap(bits), out, in);
            // the values after an odd number of other bytes, as a safetensors header can leave them
            ByteBuffer file = ByteBuffer.allocate(3 + 2 * bits.length).order(ByteOrder.LITTLE_ENDIAN);
            file.position(3);
            file.asShortBuffer().put(bits);
            Path f = tmp.resolve(out + "x" + in + ".bin");
            Files.write(f, file.array());
            FileChannel channel = FileChannel.open(f);
            FrozenMatrix read = FrozenMatrix.readBf16(channel, 3, out, in);
            for (FrozenMatrix asBf16 : List.of(inMemory, read)) {
                assertEquals(2L * out * in, asBf16.bytes());
                assertArrayEquals(w, asBf16.toFloats());
                float[] x = random(rng, rows * in);
                float[] dy = random(rng, rows * out);
                String shape = rows + "x" + in + "x" + out;
                float[] ref = new float[rows * out];
                plain.matmulNT(x, w, ref, rows, in, out, false);
                for (Kernels<float[]> k : List.of(fast, plain)) {
                    float[] y = new float[rows * out];
                    float[] yBf16 = new float[rows * out];
                    k.matmulNT(x, asFloats, y, rows);
                    k.matmulNT(x, asBf16, yBf16, rows);
                    close(ref, y, in, k.name() + " frozen NT " + shape);
                    assertArrayEquals(y, yBf16, k.name() + " frozen NT, bf16 against float32 storage, " + shape);
                }
                for (boolean acc : new boolean[]{false, true}) {
                    float[] seed = random(rng, rows * in);
                    float[] a = seed.clone();
                    float[] aBf16 = seed.clone();
                    float[] b = seed.clone();
                    float[] c = seed.clone();
                    fast.matmulNN(dy, asFloats, a, rows, acc);
                    fast.matmulNN(dy, asBf16, aBf16, rows, acc);
                    fast.matmulNN(dy, w, b, rows, out, in, acc);
                    plain.matmulNN(dy, w, c, rows, out, in, acc);
                    assertArrayEquals(b, a, "frozen NN against the float product, " + shape + " acc " + acc);
                    assertArrayEquals(b, aBf16, "frozen bf16 NN against the float product, " + shape + " acc " + acc);
                    close(c, a, out, "frozen NN " + shape + " acc " + acc);
                }
                for (FrozenMatrix m : List.of(asFloats, asBf16)) {
                    float[] row = new float[in + 3];
                    fast.copyRow(m, out - 1, row, 3);
                    for (int j = 0; j < in; j++) {
                        assertEquals(w[(out - 1) * in + j], row[3 + j]);
                    }
                }
            }
            channel.close();
        }
        fast.close();
    }

    @Test
    void triangularProductsEqualTheFullProduct() {
        Kernels<float[]> fast = Kernels.float32(2);
        SplittableRandom rng = new SplittableRandom(5);
        for (int n : new int[]{1, 5, 17, 64, 130}) {
            for (boolean lower : new boolean[]{true, false}) {
                float[] dy = random(rng, n * n);
                for (int i = 0; i < n; i++) {
                    for (int j = 0; j < n; j++) {
                        if (lower ? j > i : j < i) {
                            dy[i * n + j] = 0f;
                        }
                    }
                }
                float[] w = random(rng, n * 32);
                float[] full = new float[n * 32];
                float[] tri = new float[n * 32];
                fast.matmulNN(dy, w, full, n, n, 32, false);
                fast.matmulNNTriangular(dy, w, tri, n, 32, lower);
                assertArrayEquals(full, tri, "n " + n + (lower ? " lower" : " upper"));
            }
        }
        fast.close();
    }

    @Test
    void upperProductsEqualTheFullProductOnAndAboveTheDiagonal() {
        Kernels<float[]> fast = Kernels.float32(2);
        SplittableRandom rng = new SplittableRandom(9);
        for (int n : new int[]{1, 5, 64, 97, 130, 300}) {
            for (int out : new int[]{3, 256}) {
                for (boolean acc : new boolean[]{false, true}) {
                    float[] dy = random(rng, n * out);
                    float[] w = random(rng, out * n);
                    float[] seed = random(rng, n * n);
                    float[] full = seed.clone();
                    float[] upper = seed.clone();
                    fast.matmulNN(dy, w, full, n, out, n, acc);
                    fast.matmulNNUpper(dy, w, upper, n, out, acc);
                    for (int i = 0; i < n; i++) {
                        for (int j = i; j < n; j++) {
                            assertEquals(full[i * n + j], upper[i * n + j], 0f,
                                    "n " + n + " out " + out + " acc " + acc + " at " + i + "," + j);
                        }
                    }
                }
            }
        }
        fast.close();
    }

    @Test
    void deterministicExpIsWithinAFewUlpOfMathExp() {
        float[] xs = new float[20001];
        for (int i = 0; i < xs.length; i++) {
            xs[i] = -87f + i * (175f / (xs.length - 1));
        }
        float[] vec = xs.clone();
        Kernels<float[]> fast = Kernels.float32(1);
        fast.expInPlace(vec, 0, vec.length, 1, 0);
        for (int i = 0; i < xs.length; i++) {
            double want = Math.exp(xs[i]);
            float scalar = VectorRowOps.exp(xs[i]);
            assertEquals(want, vec[i], 3 * Math.ulp((float) want), "vector exp(" + xs[i] + ")");
            assertEquals(want, scalar, 3 * Math.ulp((float) want), "scalar exp(" + xs[i] + ")");
        }
    }

    private static float[] random(SplittableRandom rng, int n) {
        float[] f = new float[n];
        for (int i = 0; i < n; i++) {
            f[i] = (float) rng.nextGaussian();
        }
        return f;
    }

    private static void close(float[] expected, float[] got, int terms, String what) {
        for (int i = 0; i < expected.length; i++) {
            assertEquals(expected[i], got[i], 1e-5 * Math.sqrt(terms) * 4 + 1e-5, what + " at " + i);
        }
    }
}
