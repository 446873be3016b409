package dev.hexforge.kernels;

import dev.hexforge.safetensors.FloatConversion;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShape;
import jdk.incubator.vector.VectorSpecies;

/**
 * Products with a frozen weight ({@link FrozenMatrix}: float32 in the heap, or bf16 in a mapped file) for
 * {@link VectorFloatKernels}: w's rows widened a block at a time and run through the same register tiles as dense
 * weights ({@link VectorTiles}), so both give the same bits.
 */
final class FrozenProducts {
    private static final VectorSpecies<Float> S = VectorRowOps.S;
    private static final int L = VectorRowOps.L;

    private FrozenProducts() {
    }

    /** Rows [oFrom, oTo) of w against every row of x; bf16 rows are widened four at a time into a 4 × in tile. */
    static void ntFrozen(float[] x, FrozenMatrix w, float[] y, int rows, int in, int out, int oFrom, int oTo) {
        float[] direct = w.floats();
        float[] tile = direct != null ? null : new float[4 * in];
        short[] bits = direct != null ? null : new short[4 * in];
        int quads = rows / 4 * 4;
        for (int o = oFrom; o < oTo; o += 4) {
            float[] src = direct;
            int w0 = o * in;
            if (direct == null) {
                widen(w, o * in, bits, tile, 4 * in);
                src = tile;
                w0 = 0;
            }
            for (int t = 0; t < quads; t += 4) {
                VectorTiles.dotTile4x4(x, t, src, w0, y, o, in, out);
            }
            for (int t = quads; t < rows; t++) {
                VectorTiles.dotTile1x4(x, t, src, w0, y, o, in, out);
            }
        }
    }

    /** Rows of w taken at a time by the input gradient: 64 rows of 896 floats are 229 KB. */
    static final int FROZEN_BLOCK = 64;

    /**
     * Rows [from, to) of dy against all of w, a block of w's rows at a time; a bf16 block is widened into a dense
     * float32 one first (the FMA chain over o runs through the blocks in order either way, so the same bits).
     */
    static void nnFrozen(float[] dy, FrozenMatrix w, float[] dx, int from, int to, int out, int in,
                         boolean accumulate) {
        int width = 4 * L;
        int quads = from + (to - from) / 4 * 4;
        float[] direct = w.floats();
        float[] block = direct != null ? null : new float[Math.min(out, FROZEN_BLOCK) * in];
        short[] bits = direct != null ? null : new short[block.length];
        for (int o0 = 0; o0 < out; o0 += FROZEN_BLOCK) {
            int o1 = Math.min(out, o0 + FROZEN_BLOCK);
            boolean acc = accumulate || o0 > 0;
            float[] src = direct;
            int shift = 0;
            if (direct == null) {
                widen(w, o0 * in, bits, block, (o1 - o0) * in);
                src = block;
                shift = -o0 * in;
            }
            for (int i = 0; i < in; i += width) {
                for (int t = from; t < quads; t += 4) {
                    VectorTiles.tile4x4(dy, src, in, i + shift, dx, t, i, out, in, acc, o0, o1);
                }
                for (int t = quads; t < to; t++) {
                    VectorTiles.row1x4(dy, src, in, i + shift, dx, t, i, out, in, acc, o0, o1);
                }
            }
        }
    }

    private static final VectorSpecies<Short> BF16 = VectorSpecies.of(short.class, VectorShape.forBitSize(L * 16));
    private static final VectorSpecies<Integer> BITS = VectorSpecies.of(int.class, S.vectorShape());

    /**
     * n values of a bf16 matrix from flat index {@code from} as float32 into {@code dst[0 ..]}: a bulk copy of the
     * bits into {@code bits} (a memory copy from a mapped file), then each moved into the high half of a float.
     */
    static void widen(FrozenMatrix w, int from, short[] bits, float[] dst, int n) {
        w.bitsInto(from, bits, n);
        int i = 0;
        for (int bound = n / L * L; i < bound; i += L) {
            ((IntVector) ShortVector.fromArray(BF16, bits, i).convertShape(VectorOperators.S2I, BITS, 0))
                    .lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats().intoArray(dst, i);
        }
        for (; i < n; i++) {
            dst[i] = FloatConversion.bf16ToFloat(bits[i]);
        }
    }
}
