package dev.hexforge.onnx.lora;

import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * ONNX Runtime's LoRA adapter file ({@code .onnx_adapter}): a FlatBuffers buffer of schema
 * {@code onnxruntime/lora/adapter_format/adapter_schema.fbs}, file identifier {@code TORT}, root table {@code Adapter}
 * (format_version 1, adapter_version, model_version, parameters) whose {@code Parameter}s each hold a name, int64
 * dims, a {@link DataType} and the little-endian raw bytes. ONNX Runtime feeds each parameter to the graph input of
 * its name when the adapter is active in a run.
 *
 * <p>Written front to back, every offset pointing forward, vectors of int64 and raw data aligned to 8 bytes (the
 * schema's {@code force_align: 8}), as FlatBuffers' verifier checks. Read with every offset and length checked
 * against the buffer, since the file may come from anyone.
 */
public final class OnnxAdapterFile {
    public static final String EXTENSION = ".onnx_adapter";
    public static final int FORMAT_VERSION = 1;
    private static final byte[] IDENTIFIER = "TORT".getBytes(StandardCharsets.US_ASCII);
    /** FlatBuffers' offsets are 32-bit: no buffer is larger. */
    static final long MAX_BYTES = Integer.MAX_VALUE;
    static final int MAX_NAME_BYTES = 1024;
    static final int MAX_DIMS = 8;

    private OnnxAdapterFile() {
    }

    /** The element types of the schema's {@code TensorDataType} that a parameter may have (ONNX's numbering). */
    public enum DataType {
        FLOAT(1, 4), UINT8(2, 1), INT8(3, 1), UINT16(4, 2), INT16(5, 2), INT32(6, 4), INT64(7, 8), BOOL(9, 1),
        FLOAT16(10, 2), DOUBLE(11, 8), UINT32(12, 4), UINT64(13, 8), BFLOAT16(16, 2);

        private final int code;
        private final int bytes;

        DataType(int code, int bytes) {
            this.code = code;
            this.bytes = bytes;
        }

        public int code() {
            return code;
        }

        public int bytes() {
            return bytes;
        }

        static DataType of(int code) {
            for (DataType t : values()) {
                if (t.code == code) {
                    return t;
                }
            }
            return null;
        }
    }

    /** One named tensor of an adapter: its dims and raw little-endian bytes. */
    public record Parameter(String name, long[] dims, DataType type, ByteBuffer data) {
        public Parameter {
            data = data.asReadOnlyBuffer().order(ByteOrder.LITTLE_ENDIAN);
        }

        public static Parameter ofFloats(String name, long[] dims, float[] values) {
            ByteBuffer b = ByteBuffer.allocate(values.length * Float.BYTES).order(ByteOrder.LITTLE_ENDIAN);
            b.asFloatBuffer().put(values);
            return new Parameter(name, dims, DataType.FLOAT, b);
        }

        public long elements() {
            long n = 1;
            for (long d : dims) {
                n *= d;
            }
            return n;
        }

        /** A float parameter's values. */
        public float[] floats() {
            if (type != DataType.FLOAT) {
                throw new IllegalStateException(name + " is " + type + ", not FLOAT");
            }
            float[] v = new float[Math.toIntExact(elements())];
            data.duplicate().order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer().get(v);
            return v;
        }
    }

    /** A whole adapter: its versions and parameters in file order. */
    public record Adapter(int adapterVersion, int modelVersion, List<Parameter> parameters) {
        public Adapter {
            parameters = List.copyOf(parameters);
        }

        public Parameter parameter(String name) {
            return parameters.stream().filter(p -> p.name().equals(name)).findFirst().orElse(null);
        }
    }

    /** Writes {@code adapter} to {@code file}, beside it first and then moved into place. */
    public static void write(Adapter adapter, Path file) throws IOException {
        Path partial = file.resolveSibling(file.getFileName() + ".partial");
        try (OutputStream os = new BufferedOutputStream(Files.newOutputStream(partial), 1 << 16)) {
            os.write(toBytes(adapter));
        }
        Files.move(partial, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    }

    /** The FlatBuffers bytes of {@code adapter}. */
    public static byte[] toBytes(Adapter adapter) {
        List<Parameter> ps = adapter.parameters();
        long size = 0;
        for (Parameter p : ps) {
            size += 64 + p.name().length() * 3L + p.dims().length * 8L + p.data().remaining();
        }
        if (size + 64 + ps.size() * 4L > MAX_BYTES) {
            throw new IllegalArgumentException("an adapter of " + size + " bytes is over the format's 2 GB");
        }
        Writer w = new Writer((int) (size + 64 + ps.size() * 4L));
        w.putInt(0); // root offset, patched below
        w.put(IDENTIFIER);
        // Adapter: vtable of four fields, then the table (soffset, three ints, the parameters' offset)
        int vtable = w.fourFieldVtable();
        int table = w.pos;
        w.patchInt(0, table);
        w.putInt(table - vtable);
        w.putInt(FORMAT_VERSION);
        w.putInt(adapter.adapterVersion());
        w.putInt(adapter.modelVersion());
        int paramsField = w.pos;
        w.putInt(0);
        w.align(4);
        int vector = w.pos;
        w.patchInt(paramsField, vector - paramsField);
        w.putInt(ps.size());
        int elements = w.pos;
        for (int i = 0; i < ps.size(); i++) {
            w.putInt(0);
        }
        for (int i = 0; i < ps.size(); i++) {
            Parameter p = ps.get(i);
            w.align(4);
            // Parameter: the same layout (soffset, name, dims, data type, raw data)
            int pv = w.fourFieldVtable();
            int pt = w.pos;
            w.patchInt(elements + 4 * i, pt - (elements + 4 * i));
            w.putInt(pt - pv);
            int nameField = w.pos;
            w.putInt(0);
            int dimsField = w.pos;
            w.putInt(0);
            w.putInt(p.type().code());
            int dataField = w.pos;
            w.putInt(0);
            byte[] name = p.name().getBytes(StandardCharsets.UTF_8);
            w.align(4);
            w.patchInt(nameField, w.pos - nameField);
            w.putInt(name.length);
            w.put(name);
            w.put((byte) 0);
            w.alignVector8();
            w.patchInt(dimsField, w.pos - dimsField);
            w.putInt(p.dims().length);
            for (long d : p.dims()) {
                w.putLong(d);
            }
            w.alignVector8();
            w.patchInt(dataField, w.pos - dataField);
            ByteBuffer data = p.data().duplicate();
            w.putInt(data.remaining());
            w.put(data);
        }
        return Arrays.copyOf(w.buf, w.pos);
    }

    /** Reads and checks an adapter file: the identifier, the version, and every offset, name, shape and length. */
    public static Adapter read(Path file) {
        long size;
        try {
            size = Files.size(file);
        } catch (IOException e) {
            throw new AdapterFileException(file + ": cannot be read: " + e.getMessage(), e);
        }
        if (size > MAX_BYTES) {
            throw new AdapterFileException(file + ": " + size + " bytes, over the format's 2 GB: not an ONNX Runtime adapter file");
        }
        try {
            return parse(file.toString(), Files.readAllBytes(file));
        } catch (IOException e) {
            throw new AdapterFileException(file + ": cannot be read: " + e.getMessage(), e);
        }
    }

    /** As {@link #read(Path)}, of bytes; {@code what} names them in errors. */
    public static Adapter parse(String what, byte[] bytes) {
        Reader r = new Reader(what, ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN));
        if (bytes.length <= 8 || !Arrays.equals(Arrays.copyOfRange(bytes, 4, 8), IDENTIFIER)) {
            throw new AdapterFileException(what + ": not an ONNX Runtime adapter file (no \"TORT\" identifier; "
                    + "export one with hexforge export --adapter NAME=PEFT_DIR)");
        }
        int root = r.offset(0);
        int[] fields = r.table(root, 4);
        int version = fields[0] == 0 ? 0 : r.int32(fields[0]);
        if (version != FORMAT_VERSION) {
            throw new AdapterFileException(what + ": adapter format version " + version + "; this reads version " + FORMAT_VERSION);
        }
        int adapterVersion = fields[1] == 0 ? 0 : r.int32(fields[1]);
        int modelVersion = fields[2] == 0 ? 0 : r.int32(fields[2]);
        List<Parameter> params = new ArrayList<>();
        if (fields[3] != 0) {
            int vector = r.offset(fields[3]);
            int n = r.length(vector, 4);
            Set<String> names = new HashSet<>();
            for (int i = 0; i < n; i++) {
                int at = vector + 4 + 4 * i;
                Parameter p = parameter(r, r.offset(at), i);
                if (!names.add(p.name())) {
                    throw new AdapterFileException(what + ": parameter '" + p.name() + "' appears twice");
                }
                params.add(p);
            }
        }
        return new Adapter(adapterVersion, modelVersion, params);
    }

    private static Parameter parameter(Reader r, int table, int index) {
        int[] f = r.table(table, 4);
        String where = r.what + ": parameter " + index;
        if (f[0] == 0) {
            throw new AdapterFileException(where + " has no name");
        }
        int str = r.offset(f[0]);
        int len = r.length(str, 1);
        if (len == 0 || len > MAX_NAME_BYTES) {
            throw new AdapterFileException(where + ": a name of " + len + " bytes (1 to " + MAX_NAME_BYTES + ")");
        }
        String name;
        try {
            name = StandardCharsets.UTF_8.newDecoder().decode(r.buf.slice(str + 4, len)).toString();
        } catch (CharacterCodingException e) {
            throw new AdapterFileException(where + ": its name is not UTF-8");
        }
        if (name.chars().anyMatch(c -> c < 0x20)) {
            throw new AdapterFileException(where + ": its name has control characters");
        }
        where = r.what + ": parameter '" + name + "'";
        if (f[1] == 0) {
            throw new AdapterFileException(where + " has no dims");
        }
        int dimsAt = r.offset(f[1]);
        int rank = r.length(dimsAt, 8);
        if (rank > MAX_DIMS) {
            throw new AdapterFileException(where + " has " + rank + " dims (at most " + MAX_DIMS + ")");
        }
        long[] dims = new long[rank];
        long elements = 1;
        for (int i = 0; i < rank; i++) {
            dims[i] = r.buf.getLong(dimsAt + 4 + 8 * i);
            if (dims[i] < 0 || dims[i] > MAX_BYTES) {
                throw new AdapterFileException(where + " has a dimension of " + dims[i]);
            }
            elements *= dims[i];
            if (elements > MAX_BYTES) {
                throw new AdapterFileException(where + " has " + Arrays.toString(dims) + " elements, over the format's 2 GB");
            }
        }
        int code = f[2] == 0 ? 0 : r.int32(f[2]);
        DataType type = DataType.of(code);
        if (type == null) {
            throw new AdapterFileException(where + " has data type " + code + ", not a numeric tensor type");
        }
        if (f[3] == 0) {
            throw new AdapterFileException(where + " has no data");
        }
        int dataAt = r.offset(f[3]);
        int bytes = r.length(dataAt, 1);
        if (bytes != elements * type.bytes()) {
            throw new AdapterFileException(where + ": " + bytes + " bytes of data for " + Arrays.toString(dims) + " "
                    + type + " (" + elements * type.bytes() + " expected)");
        }
        return new Parameter(name, dims, type, r.buf.slice(dataAt + 4, bytes));
    }

    /** Bounds-checked reads of a FlatBuffers buffer. */
    private static final class Reader {
        final String what;
        final ByteBuffer buf;

        Reader(String what, ByteBuffer buf) {
            this.what = what;
            this.buf = buf;
        }

        private AdapterFileException broken(String why) {
            return new AdapterFileException(what + ": not a well-formed ONNX Runtime adapter file (" + why + ")");
        }

        int int32(int at) {
            if (at < 0 || at > buf.limit() - 4) {
                throw broken("a field at " + at + " is past the end");
            }
            return buf.getInt(at);
        }

        /** The position a uoffset at {@code at} points to. */
        int offset(int at) {
            long to = (long) at + Integer.toUnsignedLong(int32(at));
            if (to >= buf.limit() || to <= at) {
                throw broken("an offset at " + at + " points outside the file");
            }
            return (int) to;
        }

        /** The element count of the vector or string at {@code at}, checked against the buffer. */
        int length(int at, int elementBytes) {
            long n = Integer.toUnsignedLong(int32(at));
            if (at + 4 + n * elementBytes > buf.limit()) {
                throw broken("a vector at " + at + " of " + n + " elements runs past the end");
            }
            return (int) n;
        }

        /** The positions of a table's first {@code n} fields (0 for an absent one). */
        int[] table(int table, int n) {
            long vtable = (long) table - int32(table);
            if (vtable < 0 || vtable > buf.limit() - 4) {
                throw broken("a table at " + table + " has its vtable outside the file");
            }
            int vsize = Short.toUnsignedInt(buf.getShort((int) vtable));
            int tsize = Short.toUnsignedInt(buf.getShort((int) vtable + 2));
            if (vsize < 4 || vsize % 2 != 0 || vtable + vsize > buf.limit() || table + (long) tsize > buf.limit()) {
                throw broken("a table at " + table + " has a vtable of " + vsize + " bytes for " + tsize + " bytes");
            }
            int[] fields = new int[n];
            for (int i = 0; i < n; i++) {
                int slot = 4 + 2 * i;
                int off = slot + 2 <= vsize ? Short.toUnsignedInt(buf.getShort((int) vtable + slot)) : 0;
                if (off != 0 && (off < 4 || off + 4 > tsize)) {
                    throw broken("a table at " + table + " has field " + i + " outside it");
                }
                fields[i] = off == 0 ? 0 : table + off;
            }
            return fields;
        }
    }

    /** A growable little-endian buffer written front to back. */
    private static final class Writer {
        byte[] buf;
        int pos;

        Writer(int capacity) {
            buf = new byte[Math.max(64, capacity)];
        }

        private void room(int n) {
            if (pos + n > buf.length) {
                buf = Arrays.copyOf(buf, Math.max(pos + n, buf.length * 2));
            }
        }

        void put(byte b) {
            room(1);
            buf[pos++] = b;
        }

        void put(byte[] b) {
            room(b.length);
            System.arraycopy(b, 0, buf, pos, b.length);
            pos += b.length;
        }

        void put(ByteBuffer b) {
            int n = b.remaining();
            room(n);
            b.get(buf, pos, n);
            pos += n;
        }

        void putShort(int v) {
            room(2);
            buf[pos++] = (byte) v;
            buf[pos++] = (byte) (v >>> 8);
        }

        void putInt(int v) {
            room(4);
            patchInt(pos, v);
            pos += 4;
        }

        void putLong(long v) {
            putInt((int) v);
            putInt((int) (v >>> 32));
        }

        void patchInt(int at, int v) {
            buf[at] = (byte) v;
            buf[at + 1] = (byte) (v >>> 8);
            buf[at + 2] = (byte) (v >>> 16);
            buf[at + 3] = (byte) (v >>> 24);
        }

        /**
         * The vtable of a table of four 4-byte fields at offsets 4, 8, 12 and 16 (20 bytes with its soffset), aligned
         * so that the table can follow it; returns the vtable's position.
         */
        int fourFieldVtable() {
            int at = pos;
            putShort(4 + 2 * 4);
            putShort(20);
            for (int field = 0; field < 4; field++) {
                putShort(4 + 4 * field);
            }
            align(4);
            return at;
        }

        void align(int n) {
            while (pos % n != 0) {
                put((byte) 0);
            }
        }

        /** So that a vector's elements, after its 4-byte length, start on 8 bytes. */
        void alignVector8() {
            while ((pos + 4) % 8 != 0) {
                put((byte) 0);
            }
        }
    }
}
