package dev.hexforge.quant.resume;

import dev.hexforge.quant.QuantizationException;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Where a pass that works one decoder layer at a time keeps what it carries from one layer to the next, saved after
 * every finished layer, so that a run killed at any moment continues after the last finished layer with exactly the
 * values an uninterrupted run would have had. A state is one file, replaced atomically: a kill while saving leaves
 * the state before it.
 */
public final class LayerJournal {
    /** "HXLJ", and the format's version in the last byte. */
    private static final int MAGIC = 0x48584c01;
    private static final int PIECE = 1 << 16;
    /** No journal: every run starts at the first layer. */
    public static final LayerJournal NONE = new LayerJournal(null);

    private final Path file;

    private LayerJournal(Path file) {
        this.file = file;
    }

    /**
     * What a pass carries after {@code layersDone} layers: how many tensors it had stored by then, the hidden states
     * the next layer reads (bit for bit), its own findings so far as JSON, and float tensors it rewrote.
     */
    public record State(int layersDone, int storedTensors, List<float[]> hidden, String json, Map<String, float[]> floats) {
    }

    /** A journal kept in {@code file}. */
    public static LayerJournal in(Path file) {
        return new LayerJournal(file);
    }

    /** The state read when the run began: read once, however many ask (a large model's is a gigabyte). */
    private State resumed;
    private boolean read;

    /** The state of an earlier run to continue from, or null to start at the first layer. */
    public synchronized State resume() {
        if (!read) {
            resumed = file != null && Files.isRegularFile(file) ? read(file) : null;
            read = true;
        }
        return resumed;
    }

    public synchronized void save(State state) {
        resumed = null; // superseded: its hidden states are not kept alive beside the run's own
        if (file != null) {
            write(file, state);
        }
    }

    private static void write(Path file, State s) {
        Path tmp = file.resolveSibling(file.getFileName() + ".partial");
        try {
            Files.createDirectories(file.getParent());
            try (DataOutputStream out = new DataOutputStream(new BufferedOutputStream(Files.newOutputStream(tmp), 1 << 20))) {
                out.writeInt(MAGIC);
                out.writeInt(s.layersDone());
                out.writeInt(s.storedTensors());
                byte[] json = s.json().getBytes(StandardCharsets.UTF_8);
                out.writeInt(json.length);
                out.write(json);
                out.writeInt(s.hidden().size());
                for (float[] h : s.hidden()) {
                    writeFloats(out, h);
                }
                out.writeInt(s.floats().size());
                for (Map.Entry<String, float[]> e : s.floats().entrySet()) {
                    out.writeUTF(e.getKey());
                    writeFloats(out, e.getValue());
                }
                out.writeInt(MAGIC);
            }
            Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            throw new UncheckedIOException("saving the layer state " + file + ": " + e.getMessage(), e);
        }
    }

    private static State read(Path file) {
        try (DataInputStream in = new DataInputStream(new BufferedInputStream(Files.newInputStream(file), 1 << 20))) {
            if (in.readInt() != MAGIC) {
                throw new QuantizationException(file + " is not a layer state written by this version; delete the output "
                        + "folder to start over");
            }
            int layers = in.readInt();
            int stored = in.readInt();
            byte[] json = new byte[in.readInt()];
            in.readFully(json);
            int n = in.readInt();
            List<float[]> hidden = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                hidden.add(readFloats(in));
            }
            int m = in.readInt();
            Map<String, float[]> floats = new LinkedHashMap<>();
            for (int i = 0; i < m; i++) {
                floats.put(in.readUTF(), readFloats(in));
            }
            if (in.readInt() != MAGIC) {
                throw new EOFException("no end mark");
            }
            return new State(layers, stored, hidden, new String(json, StandardCharsets.UTF_8), floats);
        } catch (IOException e) {
            throw new QuantizationException("the layer state " + file + " cannot be read (" + e.getMessage()
                    + "); delete the output folder to start over");
        }
    }

    private static void writeFloats(DataOutputStream out, float[] v) throws IOException {
        out.writeInt(v.length);
        ByteBuffer b = ByteBuffer.allocate(Math.min(v.length, PIECE) * Float.BYTES).order(ByteOrder.LITTLE_ENDIAN);
        for (int from = 0; from < v.length; from += PIECE) {
            int n = Math.min(PIECE, v.length - from);
            b.clear();
            b.asFloatBuffer().put(v, from, n);
            out.write(b.array(), 0, n * Float.BYTES);
        }
    }

    private static float[] readFloats(DataInputStream in) throws IOException {
        int len = in.readInt();
        if (len < 0) {
            throw new EOFException("a negative length");
        }
        float[] v = new float[len];
        byte[] buf = new byte[Math.min(len, PIECE) * Float.BYTES];
        for (int from = 0; from < len; from += PIECE) {
            int n = Math.min(PIECE, len - from);
            in.readFully(buf, 0, n * Float.BYTES);
            ByteBuffer.wrap(buf, 0, n * Float.BYTES).order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer().get(v, from, n);
        }
        return v;
    }
}
