package dev.hexforge.safetensors;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.channels.WritableByteChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Supplier;

/**
 * Writes a safetensors file from tensors whose bytes are produced one at a time, so a model is never held whole in
 * memory. The file appears under its final name only when complete.
 */
public final class SafetensorsWriter {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** Writes a tensor's little-endian bytes to the file; called once, in file order. */
    @FunctionalInterface
    public interface ByteSource {
        void writeTo(WritableByteChannel out) throws IOException;
    }

    /** A tensor's values by flat index: {@code count} of them from {@code from} into {@code into[0..count)}. */
    @FunctionalInterface
    public interface FloatPieces {
        void fill(long from, float[] into, int count);
    }

    public record Entry(String name, DType dtype, long[] shape, ByteSource source) {
        public long byteSize() {
            long n = dtype.bytes();
            for (long d : shape) {
                n = Math.multiplyExact(n, d);
            }
            return n;
        }

        /** A float32 array written as F32, F16 or BF16. */
        public static Entry ofFloats(String name, long[] shape, float[] values, DType dtype) {
            return new Entry(name, dtype, shape, out -> writeFloats(out, values, dtype));
        }

        /**
         * Floats produced a piece at a time when the tensor is written ({@code pieces} is asked once, then filled
         * piece by piece in order): neither the writer nor the producer holds the whole tensor.
         */
        public static Entry ofFloatPieces(String name, long[] shape, Supplier<FloatPieces> pieces, DType dtype) {
            return new Entry(name, dtype, shape, out -> {
                long n = 1;
                for (long d : shape) {
                    n = Math.multiplyExact(n, d);
                }
                writeFloats(out, pieces.get(), n, dtype);
            });
        }

        public static Entry ofBytes(String name, DType dtype, long[] shape, ByteBuffer bytes) {
            return new Entry(name, dtype, shape, out -> writeFully(out, bytes.duplicate()));
        }

        /**
         * A tensor copied unchanged from another safetensors file when it is written, file to file (nothing mapped,
         * so nothing of it counts in the process's resident memory).
         */
        public static Entry copyOf(SafetensorsFile file, String name) {
            TensorInfo t = file.info(name);
            return new Entry(name, t.dtype(), t.shape(), out -> {
                long at = file.dataStart() + t.begin();
                long done = 0;
                while (done < t.byteSize()) {
                    long n = file.channel().transferTo(at + done, t.byteSize() - done, out);
                    if (n <= 0) {
                        throw new IOException(file.path().getFileName() + " ends inside tensor '" + name + "'");
                    }
                    done += n;
                }
            });
        }
    }

    private SafetensorsWriter() {
    }

    public static ByteBuffer encode(float[] values, DType dtype) {
        ByteBuffer b = ByteBuffer.allocate(values.length * dtype.bytes()).order(ByteOrder.LITTLE_ENDIAN);
        switch (dtype) {
            case F32 -> b.asFloatBuffer().put(values);
            case BF16 -> {
                for (float v : values) {
                    b.putShort(FloatConversion.floatToBf16(v));
                }
            }
            case F16 -> {
                for (float v : values) {
                    b.putShort(FloatConversion.floatToF16(v));
                }
            }
            default -> throw new IllegalArgumentException("cannot encode floats as " + dtype);
        }
        b.rewind();
        return b;
    }

    public static void write(Path out, Map<String, String> metadata, List<Entry> entries) {
        ObjectNode header = JSON.createObjectNode();
        if (metadata != null && !metadata.isEmpty()) {
            ObjectNode meta = header.putObject("__metadata__");
            metadata.forEach(meta::put);
        }
        Set<String> names = new HashSet<>();
        long offset = 0;
        for (Entry e : entries) {
            if (!names.add(e.name()) || e.name().equals("__metadata__")) {
                throw new IllegalArgumentException("duplicate or reserved tensor name '" + e.name() + "'");
            }
            ObjectNode t = header.putObject(e.name());
            t.put("dtype", e.dtype().name());
            ArrayNode shape = t.putArray("shape");
            for (long d : e.shape()) {
                shape.add(d);
            }
            long end = offset + e.byteSize();
            t.putArray("data_offsets").add(offset).add(end);
            offset = end;
        }
        byte[] json = header.toString().getBytes(StandardCharsets.UTF_8);
        int padded = (json.length + 7) / 8 * 8;
        ByteBuffer head = ByteBuffer.allocate(8 + padded).order(ByteOrder.LITTLE_ENDIAN);
        head.putLong(padded).put(json);
        while (head.hasRemaining()) {
            head.put((byte) ' ');
        }
        head.flip();

        Path tmp = out.resolveSibling(out.getFileName() + ".partial");
        try {
            try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.CREATE, StandardOpenOption.TRUNCATE_EXISTING,
                    StandardOpenOption.WRITE)) {
                writeFully(ch, head);
                for (Entry e : entries) {
                    long before = ch.position();
                    e.source().writeTo(ch);
                    long written = ch.position() - before;
                    if (written != e.byteSize()) {
                        throw new IllegalStateException("tensor '" + e.name() + "' produced " + written
                                + " bytes, expected " + e.byteSize());
                    }
                }
            }
            Files.move(tmp, out, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException | RuntimeException e) {
            try {
                Files.deleteIfExists(tmp);
            } catch (IOException ignored) {
                // the original failure is the one to report
            }
            if (e instanceof IOException io) {
                throw new UncheckedIOException("writing " + out + ": " + io.getMessage(), io);
            }
            throw (RuntimeException) e;
        }
    }

    /** Values encoded per write: a quarter of a million, so the piece and its bytes stay in a core's cache. */
    private static final int PIECE = 1 << 18;

    static void writeFloats(WritableByteChannel ch, float[] values, DType dtype) throws IOException {
        writeFloats(ch, (from, into, count) -> System.arraycopy(values, (int) from, into, 0, count), values.length, dtype);
    }

    /**
     * Encodes floats a piece at a time into one direct buffer: no heap copy of the whole tensor, and no temporary direct
     * buffer of its size (what a channel write of a heap buffer allocates).
     */
    static void writeFloats(WritableByteChannel ch, FloatPieces values, long count, DType dtype) throws IOException {
        ByteBuffer buf = ByteBuffer.allocateDirect((int) Math.min(PIECE, count) * dtype.bytes()).order(ByteOrder.LITTLE_ENDIAN);
        float[] piece = new float[(int) Math.min(PIECE, count)];
        for (long i = 0; i < count; i += PIECE) {
            int n = (int) Math.min(PIECE, count - i);
            values.fill(i, piece, n);
            buf.clear();
            switch (dtype) {
                case F32 -> {
                    buf.asFloatBuffer().put(piece, 0, n);
                    buf.position(n * 4);
                }
                case BF16 -> {
                    for (int j = 0; j < n; j++) {
                        buf.putShort(FloatConversion.floatToBf16(piece[j]));
                    }
                }
                case F16 -> {
                    for (int j = 0; j < n; j++) {
                        buf.putShort(FloatConversion.floatToF16(piece[j]));
                    }
                }
                default -> throw new IllegalArgumentException("cannot encode floats as " + dtype);
            }
            buf.flip();
            writeFully(ch, buf);
        }
    }

    public static void writeFully(WritableByteChannel ch, ByteBuffer b) throws IOException {
        while (b.hasRemaining()) {
            ch.write(b);
        }
    }
}
