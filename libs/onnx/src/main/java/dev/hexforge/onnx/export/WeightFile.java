package dev.hexforge.onnx.export;

import dev.hexforge.checkpoint.Checkpoint;
import dev.hexforge.forward.Rope;
import dev.hexforge.onnx.builder.ExternalDataWriter;
import dev.hexforge.onnx.proto.Onnx.TensorProto.DataType;
import dev.hexforge.progress.Progress;
import dev.hexforge.safetensors.DType;
import dev.hexforge.safetensors.FloatConversion;
import dev.hexforge.safetensors.SafetensorsFile;
import dev.hexforge.safetensors.TensorInfo;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.ShortBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * Writes the decoder's weights once, as float32, into an ONNX external-data file and remembers where each went.
 * Float32 tensors are copied file to file; 16-bit ones are widened in 1 MiB pieces, so the heap never holds a
 * whole tensor.
 */
public final class WeightFile {
    public static final String ROPE_COS = "rope.cos_cache";
    public static final String ROPE_SIN = "rope.sin_cache";
    /** The group of the RoPE tables. */
    private static final String ROPE = "rope";
    private static final int PIECE_ELEMENTS = 1 << 19;

    private final Map<String, Stored> stored = new LinkedHashMap<>();
    private final List<Stored> uncommitted = new ArrayList<>();
    private final Set<String> resumed = new HashSet<>();
    private final WeightJournal journal;
    private final Progress progress;
    /** Each checkpoint tensor's float32 size, what progress counts in. */
    private final Map<String, Long> floatBytes = new HashMap<>();
    private ExternalDataWriter writer;
    private long total;
    private long done;

    private WeightFile(WeightJournal journal, Progress progress) {
        this.journal = journal;
        this.progress = progress;
    }

    /** A tensor stored in the external-data file. */
    public record Stored(String name, DataType type, long[] shape, ExternalDataWriter.Location location) {
    }

    /** Records a tensor a {@link LinearFormat} wrote; it is part of the group the next {@link #commit} names. */
    public void put(String name, DataType type, long[] shape, ExternalDataWriter.Location location) {
        Stored s = new Stored(name, type, shape, location);
        if (stored.putIfAbsent(name, s) != null) {
            throw new IllegalStateException("weight '" + name + "' written twice");
        }
        uncommitted.add(s);
    }

    /**
     * Whether the group's tensors were written by an interrupted run this one continues (then they are recorded
     * already, and the writer skips them).
     */
    public boolean done(String group) {
        return resumed.contains(group);
    }

    /**
     * Marks the tensors recorded since the last commit as the group {@code group}, finished: a run killed after this
     * continues after it.
     */
    public void commit(String group) {
        journal.commit(group, uncommitted, writer.position());
        uncommitted.clear();
        reportDone(group);
    }

    /** Progress in the checkpoint's float32 bytes: a group named for a checkpoint tensor counts that tensor's size. */
    private void reportDone(String group) {
        done += floatBytes.getOrDefault(group, 0L);
        progress.update("weights", done, total);
    }

    public Map<String, Stored> stored() {
        return stored;
    }

    public Stored get(String name) {
        Stored s = stored.get(name);
        if (s == null) {
            throw new IllegalStateException("weight '" + name + "' was not written");
        }
        return s;
    }

    /**
     * Writes every checkpoint tensor the format does not handle as float32, then the format's own tensors, then the
     * RoPE tables for {@code ropePositions} positions (none for 0: graphs fed cos / sin need none).
     */
    public static WeightFile write(Checkpoint ckpt, Path dataFile, int ropePositions, LinearFormat format,
                                   Progress progress) throws IOException {
        return write(ckpt, dataFile, ropePositions, format, progress, WeightJournal.NONE);
    }

    /**
     * As {@link #write(Checkpoint, Path, int, LinearFormat, Progress)}, continuing after the groups {@code journal}
     * holds (when the data file is there to continue) and recording each group it finishes there.
     */
    public static WeightFile write(Checkpoint ckpt, Path dataFile, int ropePositions, LinearFormat format,
                                   Progress progress, WeightJournal journal) throws IOException {
        WeightFile wf = new WeightFile(journal, progress);
        for (String name : ckpt.tensors().keySet()) {
            long bytes = ckpt.store().info(name).numel() * 4;
            wf.floatBytes.put(name, bytes);
            wf.total += bytes;
        }
        WeightJournal.Committed before = Files.isRegularFile(dataFile) ? journal.committed() : WeightJournal.Committed.NOTHING;
        ExternalDataWriter writer = null;
        if (before.end() > 0) {
            try {
                writer = ExternalDataWriter.continuing(dataFile, before.end());
                before.groups().forEach((group, tensors) -> {
                    tensors.forEach(t -> wf.stored.put(t.name(), t));
                    wf.resumed.add(group);
                    wf.done += wf.floatBytes.getOrDefault(group, 0L);
                });
            } catch (IOException e) {
                writer = null; // the data file does not hold what the journal says: written again from the start
            }
        }
        if (writer == null) {
            journal.clear();
            writer = new ExternalDataWriter(dataFile);
        }
        wf.writer = writer;
        try (ExternalDataWriter out = writer; Widener widener = new Widener(out)) {
            for (Map.Entry<String, long[]> e : ckpt.tensors().entrySet()) {
                String name = e.getKey();
                if (format.handles(name) || wf.done(name)) {
                    continue; // the format writes it, or the run this one continues did
                }
                SafetensorsFile file = ckpt.store().file(name);
                TensorInfo info = file.info(name);
                float[] replaced = format.replacedFloatTensors().get(name);
                ExternalDataWriter.Location loc = replaced != null ? out.write(floats(replaced))
                        : info.dtype() == DType.F32
                        ? out.copyFrom(file.channel(), file.dataStart() + info.begin(), info.byteSize())
                        : widener.widen(file.bytes(name), info.dtype(), info.numel());
                wf.put(name, DataType.FLOAT, e.getValue(), loc);
                wf.commit(name);
            }
            format.writeWeights(out, wf);
            if (ropePositions > 0 && !wf.done(ROPE)) {
                Rope rope = Rope.of(ckpt.config(), ropePositions);
                long[] shape = {ropePositions, ckpt.config().headDim()};
                wf.put(ROPE_COS, DataType.FLOAT, shape, out.write(floats(rope.cos())));
                wf.put(ROPE_SIN, DataType.FLOAT, shape, out.write(floats(rope.sin())));
                wf.commit(ROPE);
            }
        }
        wf.writer = null;
        return wf;
    }

    /**
     * 16-bit floats to float32 a piece at a time: the halves read in bulk, widened as ints (bf16 is a float32's top
     * half) into one of two direct buffers while a writer thread writes the other, so widening and writing overlap.
     * One per export: its buffers and thread serve every tensor, and are made only when a tensor needs them.
     */
    private static final class Widener implements AutoCloseable {
        private final ExternalDataWriter out;
        private ExecutorService writer;
        private ByteBuffer[] pieces;
        private short[] halves;
        private int[] words;

        Widener(ExternalDataWriter out) {
            this.out = out;
        }

        ExternalDataWriter.Location widen(ByteBuffer src, DType dtype, long numel) throws IOException {
            if (writer == null) {
                writer = Executors.newSingleThreadExecutor(r -> {
                    Thread t = new Thread(r, "hexforge-weights-writer");
                    t.setDaemon(true);
                    return t;
                });
                pieces = new ByteBuffer[]{ByteBuffer.allocateDirect(PIECE_ELEMENTS * 4).order(ByteOrder.LITTLE_ENDIAN),
                        ByteBuffer.allocateDirect(PIECE_ELEMENTS * 4).order(ByteOrder.LITTLE_ENDIAN)};
                halves = new short[PIECE_ELEMENTS];
                words = new int[PIECE_ELEMENTS];
            }
            long start = out.beginPiecewise();
            ShortBuffer in = src.duplicate().order(ByteOrder.LITTLE_ENDIAN).asShortBuffer();
            Future<?> pending = null;
            int k = 0;
            for (long i = 0; i < numel; i += PIECE_ELEMENTS, k++) {
                int n = (int) Math.min(PIECE_ELEMENTS, numel - i);
                in.get(halves, 0, n);
                if (dtype == DType.BF16) {
                    for (int j = 0; j < n; j++) {
                        words[j] = halves[j] << 16;
                    }
                } else {
                    for (int j = 0; j < n; j++) {
                        words[j] = Float.floatToRawIntBits(FloatConversion.f16ToFloat(halves[j]));
                    }
                }
                ByteBuffer piece = pieces[k & 1]; // its last write (piece k - 2) finished before piece k - 1 was handed over
                piece.clear();
                piece.asIntBuffer().put(words, 0, n);
                piece.limit(n * 4);
                await(pending);
                pending = writer.submit(() -> {
                    out.writePiece(piece);
                    return null;
                });
            }
            await(pending); // every piece written: the next tensor may reuse both buffers
            return out.endPiecewise(start);
        }

        private static void await(Future<?> write) throws IOException {
            if (write == null) {
                return;
            }
            try {
                write.get();
            } catch (ExecutionException e) {
                if (e.getCause() instanceof IOException io) {
                    throw io;
                }
                throw new IllegalStateException("writing weights: " + e.getCause(), e.getCause());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new InterruptedIOException("interrupted while writing weights");
            }
        }

        @Override
        public void close() {
            if (writer != null) {
                writer.shutdownNow();
            }
        }
    }

    private static ByteBuffer floats(float[] v) {
        ByteBuffer b = ByteBuffer.allocate(v.length * 4).order(ByteOrder.LITTLE_ENDIAN);
        b.asFloatBuffer().put(v);
        return b;
    }
}
