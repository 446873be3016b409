package dev.hexforge.kernels;

import dev.hexforge.safetensors.FloatConversion;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.ShortBuffer;
import java.nio.channels.FileChannel;

/**
 * A weight matrix [rows, cols] that training and the reference forward read but never change (a frozen linear, the
 * embedding, the LM head), row-major like Hugging Face's [out, in]. It is held either as a float32 array or as
 * bfloat16 bits in a {@link ShortBuffer} — for a bf16 checkpoint, the file's own bytes mapped into memory, so the
 * heap holds none of it and the pages are the operating system's file cache, as llama.cpp's mmap — or as bfloat16
 * bits read from the file on every use (positional reads of a tile at a time: the pages stay the file cache's and are
 * never counted in the process's resident memory, which a mapping's touched pages are). Whichever, its values are
 * the float32 ones the checkpoint decodes to: the products in {@link Kernels} widen bf16 into a small float32 tile as
 * they go and give the same bits from every storage.
 *
 * <p>A class, not a record: two matrices are the same matrix by identity (a tied model's head is its embedding),
 * never by comparing contents.
 */
public final class FrozenMatrix {
    private final float[] floats;
    private final ShortBuffer bf16;
    private final FileChannel file;
    private final long fileOffset;
    private final int rows;
    private final int cols;

    /**
     * Bytes read at once from a file: the products walk a worker's rows of w in order, a tile of a few rows at a
     * time, so one read serves many tiles (a 0.5B model's 4-row tile is 7 KB; a read per tile cost a tenth of a step).
     */
    private static final int READ_AHEAD = 1 << 18;

    /** A reading thread's last read: whose, from where, and its bytes (direct, so the channel reads into it). */
    private static final class ReadBuffer {
        FrozenMatrix owner;
        long start;
        int length;
        ByteBuffer bytes;
        ShortBuffer bits;
    }

    private static final ThreadLocal<ReadBuffer> READ = ThreadLocal.withInitial(ReadBuffer::new);

    private FrozenMatrix(float[] floats, ShortBuffer bf16, int rows, int cols) {
        this(floats, bf16, null, 0, rows, cols, floats != null ? floats.length : bf16.capacity());
    }

    private FrozenMatrix(float[] floats, ShortBuffer bf16, FileChannel file, long fileOffset, int rows, int cols, long n) {
        if ((long) rows * cols != n) {
            throw new IllegalArgumentException("a [" + rows + ", " + cols + "] matrix has " + (long) rows * cols
                    + " values, not " + n);
        }
        this.floats = floats;
        this.bf16 = bf16;
        this.file = file;
        this.fileOffset = fileOffset;
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

    /**
     * bfloat16 values stored row-major at {@code offset} of an open file, read from it whenever they are used: valid
     * while the channel is open. Reads are positional, so one channel serves every thread.
     */
    public static FrozenMatrix readBf16(FileChannel file, long offset, int rows, int cols) {
        return new FrozenMatrix(null, null, file, offset, rows, cols, (long) rows * cols);
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

    /** Bytes the values take (for bf16, file pages rather than heap when mapped or read from a file). */
    public long bytes() {
        return floats != null ? 4L * floats.length : 2L * length();
    }

    /** The values as float32: the array itself when held so, else a widened copy. */
    public float[] toFloats() {
        if (floats != null) {
            return floats;
        }
        float[] out = new float[Math.toIntExact(length())];
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
            bitsInto(from + done, bits, m);
            for (int i = 0; i < m; i++) {
                dst[off + done + i] = FloatConversion.bf16ToFloat(bits[i]);
            }
        }
    }

    /** {@code n} bf16 bit patterns from flat index {@code from} into {@code dst[0 ..]}. */
    void bitsInto(int from, short[] dst, int n) {
        if (bf16 != null) {
            bf16.get(from, dst, 0, n);
            return;
        }
        ReadBuffer r = READ.get();
        long at = 2L * from; // bytes from the matrix's first value
        if (r.owner != this || at < r.start || at + 2L * n > r.start + r.length) {
            int want = (int) Math.min(Math.max(2L * n, READ_AHEAD), 2 * length() - at);
            if (r.bytes == null || r.bytes.capacity() < want) {
                r.bytes = ByteBuffer.allocateDirect(Math.max(want, READ_AHEAD)).order(ByteOrder.LITTLE_ENDIAN);
            }
            ByteBuffer b = r.bytes.clear().limit(want);
            r.owner = null; // until the read completes
            try {
                while (b.hasRemaining()) {
                    if (file.read(b, fileOffset + at + b.position()) < 0) {
                        throw new IOException("the file ends before the matrix's value " + (from + b.position() / 2));
                    }
                }
            } catch (IOException e) {
                throw new UncheckedIOException("reading a frozen weight: " + e.getMessage(), e);
            }
            r.bits = b.flip().asShortBuffer();
            r.owner = this;
            r.start = at;
            r.length = want;
        }
        r.bits.get((int) ((at - r.start) / 2), dst, 0, n);
    }
}
