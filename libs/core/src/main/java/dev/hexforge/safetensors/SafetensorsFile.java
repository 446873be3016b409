package dev.hexforge.safetensors;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.Closeable;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A validated, memory-mapped safetensors file. Every rule of the format is checked on open, so a file that opens
 * can be read without further checks; tensor bytes are mapped on demand and never copied unless asked for.
 */
public final class SafetensorsFile implements Closeable {
    public static final long MAX_HEADER_BYTES = 100_000_000L;
    private static final ObjectMapper JSON = new ObjectMapper().enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION);

    private final Path path;
    private final FileChannel channel;
    private final long dataStart;
    private final Map<String, TensorInfo> tensors;
    private final Map<String, String> metadata;

    private SafetensorsFile(Path path, FileChannel channel, long dataStart,
                            Map<String, TensorInfo> tensors, Map<String, String> metadata) {
        this.path = path;
        this.channel = channel;
        this.dataStart = dataStart;
        this.tensors = tensors;
        this.metadata = metadata;
    }

    public static SafetensorsFile open(Path path) {
        FileChannel channel;
        try {
            channel = FileChannel.open(path, StandardOpenOption.READ);
        } catch (IOException e) {
            throw new SafetensorsException(path + ": cannot open: " + e.getMessage(), e);
        }
        try {
            return read(path, channel);
        } catch (RuntimeException e) {
            closeQuietly(channel);
            throw e;
        }
    }

    private static SafetensorsFile read(Path path, FileChannel channel) {
        String file = path.getFileName().toString();
        long size;
        try {
            size = channel.size();
            if (size < 8) {
                throw new SafetensorsException(file + ": truncated: " + size + " bytes, shorter than the 8-byte header length");
            }
            ByteBuffer lenBuf = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN);
            readFully(channel, lenBuf, 0);
            long headerLen = lenBuf.getLong(0);
            if (headerLen < 2 || headerLen > MAX_HEADER_BYTES) {
                throw new SafetensorsException(file + ": header length " + Long.toUnsignedString(headerLen)
                        + " is outside 2.." + MAX_HEADER_BYTES + " bytes");
            }
            if (8 + headerLen > size) {
                throw new SafetensorsException(file + ": header length " + headerLen + " runs past the end of the file ("
                        + size + " bytes): the file is truncated or not safetensors");
            }
            ByteBuffer header = ByteBuffer.allocate((int) headerLen);
            readFully(channel, header, 8);
            String json = new String(header.array(), StandardCharsets.UTF_8);
            if (!json.startsWith("{")) {
                throw new SafetensorsException(file + ": header does not start with '{' (not a safetensors file)");
            }
            long dataStart = 8 + headerLen;
            ParsedHeader parsed = parseHeader(file, json);
            validateLayout(file, parsed.tensors, size - dataStart);
            return new SafetensorsFile(path, channel, dataStart, parsed.tensors, parsed.metadata);
        } catch (IOException e) {
            throw new SafetensorsException(file + ": read failed: " + e.getMessage(), e);
        }
    }

    private record ParsedHeader(Map<String, TensorInfo> tensors, Map<String, String> metadata) {
    }

    private static ParsedHeader parseHeader(String file, String json) {
        JsonNode root;
        try {
            root = JSON.readTree(json.stripTrailing());
        } catch (JsonProcessingException e) {
            throw new SafetensorsException(file + ": header is not valid JSON: " + e.getOriginalMessage());
        }
        if (root == null || !root.isObject()) {
            throw new SafetensorsException(file + ": header is not a JSON object");
        }
        Map<String, TensorInfo> tensors = new LinkedHashMap<>();
        Map<String, String> metadata = new LinkedHashMap<>();
        for (Iterator<Map.Entry<String, JsonNode>> it = root.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            String name = e.getKey();
            JsonNode v = e.getValue();
            if (name.equals("__metadata__")) {
                if (!v.isObject()) {
                    throw new SafetensorsException(file + ": __metadata__ must be an object of strings");
                }
                v.fields().forEachRemaining(m -> {
                    if (!m.getValue().isTextual()) {
                        throw new SafetensorsException(file + ": __metadata__ value '" + m.getKey() + "' is not a string");
                    }
                    metadata.put(m.getKey(), m.getValue().asText());
                });
                continue;
            }
            tensors.put(name, parseEntry(file, name, v));
        }
        return new ParsedHeader(Collections.unmodifiableMap(tensors), Collections.unmodifiableMap(metadata));
    }

    private static TensorInfo parseEntry(String file, String name, JsonNode v) {
        String where = file + ": tensor '" + name + "'";
        if (!v.isObject()) {
            throw new SafetensorsException(where + ": entry is not an object");
        }
        DType dtype = DType.parse(v.path("dtype").isTextual() ? v.path("dtype").asText() : null);
        if (dtype == null) {
            throw new SafetensorsException(where + ": unknown or missing dtype " + v.path("dtype"));
        }
        JsonNode shapeNode = v.path("shape");
        if (!shapeNode.isArray()) {
            throw new SafetensorsException(where + ": missing shape array");
        }
        long[] shape = new long[shapeNode.size()];
        for (int i = 0; i < shape.length; i++) {
            JsonNode d = shapeNode.get(i);
            if (!d.canConvertToLong() || !d.isIntegralNumber() || d.asLong() < 0) {
                throw new SafetensorsException(where + ": shape " + shapeNode + " has a dimension that is not a non-negative integer");
            }
            shape[i] = d.asLong();
        }
        JsonNode off = v.path("data_offsets");
        if (!off.isArray() || off.size() != 2 || !off.get(0).isIntegralNumber() || !off.get(1).isIntegralNumber()) {
            throw new SafetensorsException(where + ": data_offsets must be [begin, end]");
        }
        long begin = off.get(0).asLong();
        long end = off.get(1).asLong();
        if (begin < 0 || end < begin) {
            throw new SafetensorsException(where + ": data_offsets [" + begin + ", " + end + "] are negative or reversed");
        }
        TensorInfo info = new TensorInfo(name, dtype, shape, begin, end);
        long expected;
        try {
            expected = Math.multiplyExact(info.numel(), dtype.bytes());
        } catch (ArithmeticException e) {
            throw new SafetensorsException(where + ": shape " + info.shapeString() + " overflows");
        }
        if (expected != end - begin) {
            throw new SafetensorsException(where + ": " + dtype + info.shapeString() + " needs " + expected
                    + " bytes but data_offsets [" + begin + ", " + end + "] hold " + (end - begin));
        }
        return info;
    }

    private static void validateLayout(String file, Map<String, TensorInfo> tensors, long dataLength) {
        List<TensorInfo> sorted = new ArrayList<>(tensors.values());
        sorted.sort(Comparator.comparingLong(TensorInfo::begin).thenComparingLong(TensorInfo::end));
        long expectedBegin = 0;
        TensorInfo previous = null;
        for (TensorInfo t : sorted) {
            if (t.begin() < expectedBegin) {
                throw new SafetensorsException(file + ": tensor '" + t.name() + "' data_offsets [" + t.begin() + ", " + t.end()
                        + "] overlap tensor '" + previous.name() + "' which ends at " + expectedBegin);
            }
            if (t.begin() > expectedBegin) {
                throw new SafetensorsException(file + ": hole of " + (t.begin() - expectedBegin) + " bytes before tensor '"
                        + t.name() + "' (data_offsets must be contiguous from 0)");
            }
            expectedBegin = t.end();
            previous = t;
        }
        if (expectedBegin != dataLength) {
            String what = expectedBegin > dataLength ? "file is truncated" : "file has trailing bytes";
            throw new SafetensorsException(file + ": " + what + ": tensors end at byte " + expectedBegin
                    + " of the data buffer but the buffer holds " + dataLength + " bytes");
        }
    }

    public Path path() {
        return path;
    }

    /** Absolute file offset of the data buffer. */
    public long dataStart() {
        return dataStart;
    }

    public FileChannel channel() {
        return channel;
    }

    public Map<String, String> metadata() {
        return metadata;
    }

    /** Tensors in header order. */
    public List<TensorInfo> tensors() {
        return List.copyOf(tensors.values());
    }

    public boolean contains(String name) {
        return tensors.containsKey(name);
    }

    public TensorInfo info(String name) {
        TensorInfo t = tensors.get(name);
        if (t == null) {
            throw new SafetensorsException(path.getFileName() + ": no tensor named '" + name + "'");
        }
        return t;
    }

    /** The tensor's bytes, mapped read-only, little-endian. */
    public ByteBuffer bytes(String name) {
        TensorInfo t = info(name);
        try {
            if (t.byteSize() == 0) {
                return ByteBuffer.allocate(0).order(ByteOrder.LITTLE_ENDIAN);
            }
            if (t.byteSize() > Integer.MAX_VALUE) {
                throw new SafetensorsException(path.getFileName() + ": tensor '" + name + "' is over 2 GiB; read it in slices");
            }
            return channel.map(FileChannel.MapMode.READ_ONLY, dataStart + t.begin(), t.byteSize()).order(ByteOrder.LITTLE_ENDIAN);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The tensor converted to float32 (from F32, F16, BF16 or F64). */
    public float[] floats(String name) {
        TensorInfo t = info(name);
        return FloatConversion.toFloats(bytes(name), t.dtype(), (int) t.numel(), path.getFileName() + ": tensor '" + name + "'");
    }

    @Override
    public void close() {
        closeQuietly(channel);
    }

    private static void readFully(FileChannel ch, ByteBuffer buf, long pos) throws IOException {
        while (buf.hasRemaining()) {
            int n = ch.read(buf, pos + buf.position());
            if (n < 0) {
                throw new IOException("unexpected end of file");
            }
        }
    }

    private static void closeQuietly(FileChannel ch) {
        try {
            ch.close();
        } catch (IOException ignored) {
            // nothing to release beyond the descriptor
        }
    }
}
