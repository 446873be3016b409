package dev.hexforge.onnx.builder;

import java.io.Closeable;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * Appends tensor bytes to an ONNX external-data file. Each tensor starts at a 4096-byte boundary so runtimes can
 * memory-map it; bytes can come from a buffer or straight from another file (no copy through the heap).
 */
public final class ExternalDataWriter implements Closeable {
    public static final int ALIGNMENT = 4096;

    /** Where one tensor's bytes were written. */
    public record Location(String file, long offset, long length) {
    }

    private final Path path;
    private final FileChannel out;
    private long position;

    public ExternalDataWriter(Path path) throws IOException {
        this(path, FileChannel.open(path, StandardOpenOption.CREATE, StandardOpenOption.TRUNCATE_EXISTING,
                StandardOpenOption.WRITE), 0);
    }

    private ExternalDataWriter(Path path, FileChannel out, long position) {
        this.path = path;
        this.out = out;
        this.position = position;
    }

    /**
     * Continues a file an interrupted writer left, after its first {@code length} bytes (what it had finished): the
     * rest is cut off, and the next tensor goes where it would have gone.
     */
    public static ExternalDataWriter continuing(Path path, long length) throws IOException {
        FileChannel out = FileChannel.open(path, StandardOpenOption.WRITE);
        try {
            if (out.size() < length) {
                throw new IOException(path + " has " + out.size() + " bytes, fewer than the " + length + " written before");
            }
            out.truncate(length);
        } catch (IOException e) {
            out.close();
            throw e;
        }
        return new ExternalDataWriter(path, out, length);
    }

    /** The file's length so far: where the bytes written until now end. */
    public long position() {
        return position;
    }

    public Path path() {
        return path;
    }

    private long align() {
        long aligned = (position + ALIGNMENT - 1) / ALIGNMENT * ALIGNMENT;
        position = aligned;
        return aligned;
    }

    /** A heap buffer is written in slices of this size, so the channel's temporary direct buffer stays small. */
    private static final int SLICE = 1 << 22;

    public Location write(ByteBuffer data) throws IOException {
        long start = align();
        ByteBuffer b = data.duplicate();
        long len = b.remaining();
        long p = start;
        while (b.hasRemaining()) {
            ByteBuffer slice = b.isDirect() ? b : b.slice(b.position(), Math.min(SLICE, b.remaining()));
            int n = out.write(slice, p);
            p += n;
            if (!b.isDirect()) {
                b.position(b.position() + n);
            }
        }
        position = start + len;
        return new Location(path.getFileName().toString(), start, len);
    }

    /** Copies {@code length} bytes from {@code src} at {@code srcOffset}, kernel to kernel. */
    public Location copyFrom(FileChannel src, long srcOffset, long length) throws IOException {
        long start = align();
        long done = 0;
        while (done < length) {
            long n = src.transferTo(srcOffset + done, length - done, out.position(start + done));
            if (n <= 0) {
                throw new IOException("source ended after " + done + " of " + length + " bytes");
            }
            done += n;
        }
        position = start + length;
        return new Location(path.getFileName().toString(), start, length);
    }

    /** Starts a tensor written in several pieces; finish with {@link #endPiecewise(long)}. */
    public long beginPiecewise() {
        return align();
    }

    public void writePiece(ByteBuffer piece) throws IOException {
        ByteBuffer b = piece.duplicate();
        while (b.hasRemaining()) {
            position += out.write(b, position);
        }
    }

    public Location endPiecewise(long start) {
        return new Location(path.getFileName().toString(), start, position - start);
    }

    @Override
    public void close() throws IOException {
        out.truncate(position);
        out.close();
    }
}
