package dev.hexforge.kernels;

import dev.hexforge.safetensors.FloatConversion;

import java.nio.ShortBuffer;

/**
 * A weight matrix [rows, cols] that training and the reference forward read but never change (a frozen linear, the
 * embedding, the LM head), row-major like Hugging Face's [out, in]. It is held either as a float32 array or as
 * bfloat16 bits in a {@link ShortBuffer} — for a bf16 checkpoint, the file's own bytes mapped into memory, so the
 * heap holds none of it and the pages are the operating system's file cache, as llama.cpp's mmap. Either way its
 * values are the float32 ones the checkpoint decodes to: the products in {@link Kernels} widen bf16 into a small
 * float32 tile as they go and give the same bits from either storage.
 *
 * <p>A class, not a record: two matrices are the same matrix by identity (a tied model's head is its embedding),
 * never by comparing contents.
 */
public final class FrozenMatrix {
    private final float[] floats;
    private final ShortBuffer bf16;
    private final int rows;
    private final int cols;

    private FrozenMatrix(float[] floats, ShortBuffer bf16, int rows, int cols) {
        long n = floats != null ? floats.length : bf16.capacity();
        if ((long) rows * cols != n) {
            throw new IllegalArgumentException("a [" + rows + ", " + cols + "] matrix has " + (long) rows * cols
                    + " values, not " + n);
        }
        this.floats = floats;
        this.bf16 = bf16;
        this.rows = rows;
        this.cols = cols;
    }

    /** Float32 values, shared, not copied. */
    public static FrozenMatrix of(float[] values, int rows, int cols) {
        return new FrozenMatrix(values, null, rows, cols);
    }

    /**
     * bfloat16 bit patterns (the high half of each float32 value), shared, not copied: a mapped tensor's bytes or a
     * wrapped array. Only absolute reads are made, so one buffer serves every thread.
     */
    public static FrozenMatrix ofBf16(ShortBuffer bits, int rows, int cols) {
        return new FrozenMatrix(null, bits, rows, cols);
    }

    public int rows() {
        return rows;
    }

    public int cols() {
        return cols;
    }

    /** The float32 array when held so, else null. */
    public float[] floats() {
        return floats;
    }

    public long length() {
        return (long) rows * cols;
    }

    /** Bytes the values take in memory (for bf16, mapped file pages rather than heap when the buffer is mapped). */
    public long bytes() {
        return floats != null ? 4L * floats.length : 2L * bf16.capacity();
    }

    /** The values as float32: the array itself when held so, else a widened copy. */
    public float[] toFloats() {
        if (floats != null) {
            return floats;
        }
        float[] out = new float[bf16.capacity()];
        widenInto(0, out, 0, out.length);
        return out;
    }

    /** Row {@code row} as float32 into {@code dst[off ..]}. */
    public void rowInto(int row, float[] dst, int off) {
        if (floats != null) {
            System.arraycopy(floats, row * cols, dst, off, cols);
        } else {
            widenInto(row * cols, dst, off, cols);
        }
    }

    /** n bf16 values from flat index {@code from} as float32 into {@code dst[off ..]}, through a bounded buffer of bits. */
    private void widenInto(int from, float[] dst, int off, int n) {
        short[] bits = new short[Math.min(n, 1 << 16)];
        for (int done = 0; done < n; done += bits.length) {
            int m = Math.min(bits.length, n - done);
            bf16.get(from + done, bits, 0, m);
            for (int i = 0; i < m; i++) {
                dst[off + done + i] = FloatConversion.bf16ToFloat(bits[i]);
            }
        }
    }

    /** {@code n} bf16 bit patterns from flat index {@code from} into {@code dst[0 ..]}. */
    void bitsInto(int from, short[] dst, int n) {
        bf16.get(from, dst, 0, n);
    }
}
