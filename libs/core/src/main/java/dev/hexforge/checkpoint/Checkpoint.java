package dev.hexforge.checkpoint;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.hexforge.kernels.FrozenMatrix;
import dev.hexforge.safetensors.DType;
import dev.hexforge.safetensors.SafetensorsFile;
import dev.hexforge.safetensors.TensorInfo;
import dev.hexforge.safetensors.TensorStore;

import java.io.Closeable;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.LongBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static dev.hexforge.checkpoint.TensorNames.Linear;

/**
 * A Hugging Face model folder whose config and weights have been checked against each other: every tensor the
 * decoder needs is present with the shape the config implies and a float dtype. NaN or Inf weights are refused
 * naming the tensors, unless the caller allows them ({@link NonFinite}).
 */
public final class Checkpoint implements Closeable {
    private static final System.Logger LOG = System.getLogger(Checkpoint.class.getName());

    private final Path dir;
    private final ModelConfig config;
    private final TensorStore store;
    private final Map<String, long[]> expected;
    private final List<String> warnings;

    private Checkpoint(Path dir, ModelConfig config, TensorStore store, Map<String, long[]> expected, List<String> warnings) {
        this.dir = dir;
        this.config = config;
        this.store = store;
        this.expected = expected;
        this.warnings = warnings;
    }

    /** The checkpoint in {@code dir}, refusing NaN or Inf weights ({@link NonFinite#REFUSE}). */
    public static Checkpoint open(Path dir) {
        return open(dir, NonFinite.REFUSE);
    }

    /**
     * The checkpoint in {@code dir}; NaN or Inf weights are refused, naming each tensor and how many it holds, or
     * with {@link NonFinite#ALLOW} reported among the {@link #warnings}.
     */
    public static Checkpoint open(Path dir, NonFinite nonFinite) {
        ModelConfig config = ModelConfig.read(dir);
        TensorStore store = TensorStore.open(dir);
        try {
            Map<String, long[]> expected = expectedTensors(config);
            List<String> problems = new ArrayList<>();
            for (Map.Entry<String, long[]> e : expected.entrySet()) {
                if (!store.contains(e.getKey())) {
                    problems.add("missing tensor '" + e.getKey() + "'");
                    continue;
                }
                TensorInfo t = store.info(e.getKey());
                if (!Arrays.equals(t.shape(), e.getValue())) {
                    problems.add("tensor '" + e.getKey() + "' has shape " + t.shapeString() + " but config.json implies "
                            + Arrays.toString(e.getValue()));
                }
                if (t.dtype() != DType.F32 && t.dtype() != DType.F16 && t.dtype() != DType.BF16) {
                    problems.add("tensor '" + e.getKey() + "' has dtype " + t.dtype() + " (expected F32, F16 or BF16)");
                }
            }
            if (!problems.isEmpty()) {
                throw new CheckpointException(dir.getFileName() + ": weights disagree with config.json: " + String.join("; ", problems));
            }
            List<String> warnings = new ArrayList<>();
            Set<String> extra = new LinkedHashSet<>(store.names());
            extra.removeAll(expected.keySet());
            if (config.tieWordEmbeddings()) {
                extra.remove(TensorNames.LM_HEAD); // some exporters write the tied head anyway; it is ignored
            }
            if (!extra.isEmpty()) {
                warnings.add("ignoring " + extra.size() + " tensor(s) the decoder does not use: " + extra);
            }
            long[] scratch = new long[SCAN_CHUNK]; // one for every tensor: a fleet opens a checkpoint per job
            ByteBuffer piece = ByteBuffer.allocate(SCAN_CHUNK * Long.BYTES);
            List<String> nonFiniteTensors = new ArrayList<>();
            for (String name : expected.keySet()) {
                long bad = countNonFinite(store.file(name), store.info(name), piece, scratch);
                if (bad > 0) {
                    nonFiniteTensors.add("'" + name + "' (" + bad + " of " + store.info(name).numel() + ")");
                }
            }
            if (!nonFiniteTensors.isEmpty()) {
                String which = String.join(", ", nonFiniteTensors.subList(0, Math.min(5, nonFiniteTensors.size())))
                        + (nonFiniteTensors.size() > 5 ? " and " + (nonFiniteTensors.size() - 5) + " more" : "");
                if (nonFinite == NonFinite.REFUSE) {
                    throw new CheckpointException(dir + ": NaN or Inf weights in " + nonFiniteTensors.size() + " tensor(s): "
                            + which + "; a model with them computes NaN. Fix the checkpoint, or go on anyway with "
                            + "allowNonFinite: true in the job spec (--allow-non-finite on the command line)");
                }
                warnings.add("going on, as allowNonFinite asks, with NaN or Inf weights in " + nonFiniteTensors.size()
                        + " tensor(s): " + which);
            }
            warnings.forEach(w -> LOG.log(System.Logger.Level.WARNING, "{0}: {1}", dir.getFileName(), w));
            return new Checkpoint(dir, config, store, Collections.unmodifiableMap(expected), List.copyOf(warnings));
        } catch (RuntimeException e) {
            store.close();
            throw e;
        }
    }

    /** Every tensor the decoder reads, with its shape, in a stable order (embeddings, layers, norm, head). */
    public static Map<String, long[]> expectedTensors(ModelConfig c) {
        Map<String, long[]> m = new LinkedHashMap<>();
        long h = c.hiddenSize();
        m.put(TensorNames.EMBED, new long[]{c.vocabSize(), h});
        for (int i = 0; i < c.numLayers(); i++) {
            m.put(TensorNames.inputNorm(i), new long[]{h});
            m.put(TensorNames.weight(i, Linear.Q), new long[]{c.qSize(), h});
            m.put(TensorNames.weight(i, Linear.K), new long[]{c.kvSize(), h});
            m.put(TensorNames.weight(i, Linear.V), new long[]{c.kvSize(), h});
            if (c.attentionBias()) {
                m.put(TensorNames.bias(i, Linear.Q), new long[]{c.qSize()});
                m.put(TensorNames.bias(i, Linear.K), new long[]{c.kvSize()});
                m.put(TensorNames.bias(i, Linear.V), new long[]{c.kvSize()});
            }
            if (c.qkNorm()) {
                m.put(TensorNames.qNorm(i), new long[]{c.headDim()});
                m.put(TensorNames.kNorm(i), new long[]{c.headDim()});
            }
            m.put(TensorNames.weight(i, Linear.O), new long[]{h, c.qSize()});
            m.put(TensorNames.postAttentionNorm(i), new long[]{h});
            m.put(TensorNames.weight(i, Linear.GATE), new long[]{c.intermediateSize(), h});
            m.put(TensorNames.weight(i, Linear.UP), new long[]{c.intermediateSize(), h});
            m.put(TensorNames.weight(i, Linear.DOWN), new long[]{h, c.intermediateSize()});
        }
        m.put(TensorNames.FINAL_NORM, new long[]{h});
        if (!c.tieWordEmbeddings()) {
            m.put(TensorNames.LM_HEAD, new long[]{c.vocabSize(), h});
        }
        return m;
    }

    /**
     * NaN and Inf values of a float tensor: those whose exponent bits are all set. The 16-bit types are tested four
     * to a long, read in bulk (a value-at-a-time read of a mapped buffer made this scan a second of every open at 0.5B).
     */
    static long countNonFinite(ByteBuffer b, DType dtype, long[] scratch) {
        return switch (dtype) {
            case F32 -> countAllSet(b, 0x7f800000_7f800000L, 2, scratch);
            case BF16 -> countAllSet(b, 0x7f80_7f80_7f80_7f80L, 4, scratch);
            case F16 -> countAllSet(b, 0x7c00_7c00_7c00_7c00L, 4, scratch);
            default -> 0;
        };
    }

    /**
     * A tensor's NaN and Inf values, read from its file a piece at a time into {@code piece}: read, not mapped, so
     * scanning a model of any size leaves none of its pages mapped into this process (a mapped scan of an 8B
     * checkpoint counted its 16 GB in the process's resident memory until the mappings were collected).
     */
    static long countNonFinite(SafetensorsFile file, TensorInfo t, ByteBuffer piece, long[] scratch) {
        long bad = 0;
        long start = file.dataStart() + t.begin();
        try {
            for (long done = 0; done < t.byteSize(); ) {
                piece.clear();
                piece.limit((int) Math.min(piece.capacity(), t.byteSize() - done));
                while (piece.hasRemaining()) {
                    if (file.channel().read(piece, start + done + piece.position()) < 0) {
                        throw new CheckpointException(file.path().getFileName() + ": tensor '" + t.name() + "' ends before its "
                                + t.byteSize() + " bytes");
                    }
                }
                piece.flip();
                bad += countNonFinite(piece, t.dtype(), scratch);
                done += piece.limit();
            }
        } catch (IOException e) {
            throw new UncheckedIOException("reading " + file.path() + ": " + e.getMessage(), e);
        }
        return bad;
    }

    /** Longs {@link #countNonFinite} reads at a time (into its caller's scratch array). */
    static final int SCAN_CHUNK = 1 << 14;

    /** Lanes (of {@code 64 / lanes} bits) whose {@code mask} bits are all set, in a little-endian buffer. */
    private static long countAllSet(ByteBuffer src, long mask, int lanes, long[] chunk) {
        ByteBuffer b = src.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        int laneBits = 64 / lanes;
        // a lane's masked bits XOR the mask is zero exactly when all are set; adding (top bit - 1) to the lane sets its
        // top bit when it is not zero, without a carry into the next lane (the mask leaves the top bit clear)
        long below = 0;
        long top = 0;
        for (int i = 0; i < lanes; i++) {
            below |= ((1L << (laneBits - 1)) - 1) << (i * laneBits);
            top |= 1L << (i * laneBits + laneBits - 1);
        }
        long bad = 0;
        LongBuffer longs = b.asLongBuffer();
        while (longs.hasRemaining()) {
            int n = Math.min(chunk.length, longs.remaining());
            longs.get(chunk, 0, n);
            for (int i = 0; i < n; i++) {
                long t = (chunk[i] & mask) ^ mask;
                bad += lanes - Long.bitCount((t + below) & top);
            }
        }
        int laneBytes = laneBits / 8;
        for (int at = b.remaining() / 8 * 8; at + laneBytes <= b.remaining(); at += laneBytes) {
            long v = laneBytes == 4 ? b.getInt(b.position() + at) : b.getShort(b.position() + at);
            if ((v & mask & ((1L << laneBits) - 1)) == (mask & ((1L << laneBits) - 1))) {
                bad++;
            }
        }
        return bad;
    }

    public Path dir() {
        return dir;
    }

    public ModelConfig config() {
        return config;
    }

    public TensorStore store() {
        return store;
    }

    /** Names and shapes of the tensors the decoder reads. */
    public Map<String, long[]> tensors() {
        return expected;
    }

    public List<String> warnings() {
        return warnings;
    }

    public float[] floats(String name) {
        return store.floats(name);
    }

    /**
     * Whether every 2-D tensor the decoder reads is bf16, so that {@link #matrix} maps them all and the heap holds
     * only norms and biases of the model (memory planning).
     */
    public boolean mapsBf16() {
        for (Map.Entry<String, long[]> e : expected.entrySet()) {
            if (e.getValue().length == 2 && store.info(e.getKey()).dtype() != DType.BF16) {
                return false;
            }
        }
        return true;
    }

    /**
     * A 2-D tensor as a {@link FrozenMatrix}: when the checkpoint holds bf16, the file's bytes mapped read-only, not
     * copied (no heap, the same values; the mapping outlives {@link #close}, as mappings do); float32 on the heap
     * otherwise.
     */
    public FrozenMatrix matrix(String name) {
        TensorInfo t = matrixInfo(name);
        if (t.dtype() != DType.BF16) {
            return FrozenMatrix.of(floats(name), Math.toIntExact(t.dim(0)), Math.toIntExact(t.dim(1)));
        }
        return FrozenMatrix.ofBf16(store.bytes(name).asShortBuffer(), Math.toIntExact(t.dim(0)), Math.toIntExact(t.dim(1)));
    }

    /**
     * As {@link #matrix}, but a bf16 tensor is read from the file whenever it is used rather than mapped: the pages
     * stay the file cache's and never count in this process's resident memory (a mapping's touched pages do: all of
     * an 8B model's 16 GB after one pass). Valid while this checkpoint is open.
     */
    public FrozenMatrix readMatrix(String name) {
        TensorInfo t = matrixInfo(name);
        if (t.dtype() != DType.BF16) {
            return FrozenMatrix.of(floats(name), Math.toIntExact(t.dim(0)), Math.toIntExact(t.dim(1)));
        }
        SafetensorsFile file = store.file(name);
        return FrozenMatrix.readBf16(file.channel(), file.dataStart() + t.begin(), Math.toIntExact(t.dim(0)),
                Math.toIntExact(t.dim(1)));
    }

    private TensorInfo matrixInfo(String name) {
        TensorInfo t = store.info(name);
        if (t.rank() != 2) {
            throw new CheckpointException(name + ": expected a 2-D tensor, got shape " + Arrays.toString(t.shape()));
        }
        return t;
    }

    /** Files beside the weights that travel with a model folder when a pass writes a new one. */
    public static final List<String> SIDE_FILES = List.of("config.json", "generation_config.json", "tokenizer.json",
            "tokenizer_config.json", "vocab.json", "merges.txt", "special_tokens_map.json");

    /**
     * The model's name: config.json's {@code _name_or_path} (Hugging Face's own record, which the passes that write
     * a new folder keep), else the folder's name. Exports record it, so an export names the model it came from,
     * not the scratch folder a stage happened to read it from.
     */
    public String name() {
        try {
            JsonNode n = new ObjectMapper()
                    .readTree(dir.resolve("config.json").toFile()).path(NAME_FIELD);
            if (n.isTextual() && !n.asText().isBlank()) {
                return n.asText();
            }
        } catch (IOException e) {
            // opened already, so config.json was readable; the folder's name will do
        }
        Path f = dir.toAbsolutePath().normalize().getFileName();
        return f == null ? "model" : f.toString();
    }

    private static final String NAME_FIELD = "_name_or_path";

    /** Copies this folder's side files (those present) into {@code dir}; config.json names the model ({@link #name}). */
    public void copySideFiles(Path dir) throws IOException {
        for (String f : SIDE_FILES) {
            Path src = this.dir.resolve(f);
            if (Files.isRegularFile(src)) {
                Files.copy(src, dir.resolve(f), StandardCopyOption.REPLACE_EXISTING);
            }
        }
        Path config = dir.resolve("config.json");
        ObjectMapper json = new ObjectMapper()
                .enable(SerializationFeature.INDENT_OUTPUT);
        JsonNode c = json.readTree(config.toFile());
        if (c instanceof ObjectNode o && !o.path(NAME_FIELD).isTextual()) {
            o.put(NAME_FIELD, name());
            json.writeValue(config.toFile(), o);
        }
    }

    @Override
    public void close() {
        store.close();
    }
}
