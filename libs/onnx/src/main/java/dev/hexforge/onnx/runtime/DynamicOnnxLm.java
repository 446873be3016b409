package dev.hexforge.onnx.runtime;

import ai.onnxruntime.OnnxTensor;
import ai.onnxruntime.OnnxValue;
import ai.onnxruntime.OrtEnvironment;
import ai.onnxruntime.OrtException;
import ai.onnxruntime.OrtLoraAdapter;
import ai.onnxruntime.OrtSession;
import dev.hexforge.generate.CausalLm;
import dev.hexforge.generate.DecodeSession;
import dev.hexforge.generate.LogitRows;
import dev.hexforge.onnx.export.ExportInfo;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.LongBuffer;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** Runs a dynamic-shape export (Hugging Face convention) with batch 1, feeding each run's present cache back as past. */
public final class DynamicOnnxLm implements OnnxCausalLm {
    private final ExportInfo info;
    private final OrtSession session;
    private final OrtEnvironment env = OrtEnvironment.getEnvironment();
    /** The {@code logits_from} value (-1) of a session that only generates (ONNX Runtime reads it in place); else null. */
    private final OnnxTensor keepLast;
    /** The cache's input and output names, entry i of each being layer i / 2's key (even) or value (odd). */
    private final String[] pastNames;
    private final String[] presentNames;
    /** Every output but the logits: what a generating run gets back in its result (the logits go to a pinned buffer). */
    private final Set<String> presents;

    /** The feed of the graph's LoRA inputs and its adapter for this session (null when the graph takes none). */
    private final Path dir;
    private LoraFeed loraFeed;
    private OrtLoraAdapter lora;

    public DynamicOnnxLm(Path dir, ExportInfo info, int threads, Map<String, String> qnn, Path profileDir, LogitRows rows) {
        this(dir, info, threads, qnn, profileDir, rows, LoraFeed.open(dir, info, null));
    }

    /** @param lora the LoRA inputs' feed, owned (closed) by this model from here */
    DynamicOnnxLm(Path dir, ExportInfo info, int threads, Map<String, String> qnn, Path profileDir, LogitRows rows, LoraFeed lora) {
        this.dir = dir;
        this.info = info;
        this.loraFeed = lora;
        this.keepLast = rows == LogitRows.LAST && info.logitsFrom() != null ? longs(new long[]{-1}, 1) : null;
        try {
            this.session = OrtSessions.open(info.graph(dir, "model"), threads, qnn, profileDir == null ? null : profileDir.resolve("model"),
                    keepLast == null ? Map.of() : Map.of(info.logitsFrom(), keepLast));
        } catch (RuntimeException e) {
            if (keepLast != null) {
                keepLast.close();
            }
            throw e;
        }
        pastNames = new String[info.numLayers() * 2];
        presentNames = new String[pastNames.length];
        for (int i = 0; i < pastNames.length; i++) {
            String entry = (i / 2) + (i % 2 == 0 ? ".key" : ".value");
            pastNames[i] = "past_key_values." + entry;
            presentNames[i] = "present." + entry;
        }
        presents = new LinkedHashSet<>(List.of(presentNames));
        try {
            this.lora = lora.forSession(session);
        } catch (RuntimeException e) {
            close();
            throw e;
        }
    }

    private OnnxTensor longs(long[] values, long... shape) {
        try {
            return OnnxTensor.createTensor(env, LongBuffer.wrap(values), shape);
        } catch (OrtException e) {
            throw new OnnxRuntimeException("creating an input tensor: " + e.getMessage(), e);
        }
    }

    @Override
    public int vocabSize() {
        return info.vocabSize();
    }

    @Override
    public int maxContext() {
        return info.maxPositionEmbeddings();
    }

    @Override
    public LogitRows logitRows() {
        return keepLast == null ? LogitRows.ALL : LogitRows.LAST;
    }

    @Override
    public void useAdapter(String adapter) {
        LoraFeed next = LoraFeed.open(dir, info, adapter);
        OrtLoraAdapter a;
        try {
            a = next.forSession(session);
        } catch (RuntimeException e) {
            next.close();
            throw e;
        }
        LoraFeed previous = loraFeed;
        loraFeed = next;
        lora = a;
        previous.close();
    }

    @Override
    public DecodeSession start(int capacity) {
        return new Session();
    }

    @Override
    public void close() {
        try {
            session.close();
        } catch (OrtException e) {
            throw new OnnxRuntimeException("closing session: " + e.getMessage(), e);
        } finally {
            if (keepLast != null) {
                keepLast.close();
            }
            loraFeed.close();
        }
    }

    private final class Session implements DecodeSession {
        private OrtSession.Result previous;
        private final OnnxTensor[] past = new OnnxTensor[info.numLayers() * 2];
        private int length;
        /*
         * A generating session's one row of logits: ONNX Runtime writes it into this direct buffer (a pinned output)
         * and it is copied into lastRow, both allocated once per sequence. Fresh 600 KB arrays per token (the Java
         * API's copy and ours) cost 1-4 ms a step on heap pages the JVM had not touched yet (docs/benchmarks.md).
         */
        private final FloatBuffer logitsBuffer;
        private final OnnxTensor logitsOut;
        private final float[] lastRow;

        Session() {
            try {
                long[] shape = {1, info.numKvHeads(), 0, info.headDim()};
                for (int i = 0; i < past.length; i++) {
                    past[i] = OnnxTensor.createTensor(env, FloatBuffer.allocate(0), shape);
                }
                if (keepLast != null) {
                    logitsBuffer = ByteBuffer.allocateDirect(info.vocabSize() * Float.BYTES).order(ByteOrder.nativeOrder()).asFloatBuffer();
                    logitsOut = OnnxTensor.createTensor(env, logitsBuffer, new long[]{1, 1, info.vocabSize()});
                    lastRow = new float[info.vocabSize()];
                } else {
                    logitsBuffer = null;
                    logitsOut = null;
                    lastRow = null;
                }
            } catch (OrtException e) {
                throw new OnnxRuntimeException("creating the empty cache: " + e.getMessage(), e);
            }
        }

        @Override
        public float[] append(int[] ids) {
            float[][] rows = run(ids);
            return rows[rows.length - 1];
        }

        @Override
        public float[][] appendAll(int[] ids) {
            if (keepLast != null && ids.length > 1) {
                throw new IllegalStateException("this model was opened for generation and returns the last position's logits only; "
                        + "open it with LogitRows.ALL to score every position");
            }
            return run(ids);
        }

        /** Runs the ids; returns the logits the session computes: every position's, or the last one's when generating. */
        private float[][] run(int[] ids) {
            int n = ids.length;
            long[] idBuf = new long[n];
            long[] posBuf = new long[n];
            for (int i = 0; i < n; i++) {
                idBuf[i] = ids[i];
                posBuf[i] = length + i;
            }
            long[] maskBuf = new long[length + n];
            Arrays.fill(maskBuf, 1L);
            Map<String, OnnxTensor> in = new HashMap<>();
            try (OnnxTensor idsT = OnnxTensor.createTensor(env, LongBuffer.wrap(idBuf), new long[]{1, n});
                 OnnxTensor posT = OnnxTensor.createTensor(env, LongBuffer.wrap(posBuf), new long[]{1, n});
                 OnnxTensor maskT = OnnxTensor.createTensor(env, LongBuffer.wrap(maskBuf), new long[]{1, length + n})) {
                in.put("input_ids", idsT);
                in.put("position_ids", posT);
                in.put("attention_mask", maskT);
                for (int i = 0; i < past.length; i++) {
                    in.put(pastNames[i], past[i]);
                }
                OrtSession.Result r;
                float[][] logits;
                if (logitsOut != null) {
                    try {
                        r = OrtRuns.run(lora, o -> session.run(in, presents, Map.of("logits", logitsOut), o));
                    } catch (OrtException e) {
                        throw new OnnxRuntimeException("ONNX Runtime run failed (the logits must be one row, [1, 1, "
                                + info.vocabSize() + "], where " + info.logitsFrom() + " = -1 asks for the last one only): "
                                + e.getMessage(), e);
                    }
                    logitsBuffer.rewind();
                    logitsBuffer.get(lastRow);
                    logits = new float[][]{lastRow};
                } else {
                    r = OrtRuns.run(lora, o -> session.run(in, o));
                    OnnxTensor logitsT = (OnnxTensor) r.get("logits").orElseThrow();
                    logits = unbatch(logitsT, (int) logitsT.getInfo().getShape()[1]);
                }
                OnnxTensor[] next = new OnnxTensor[past.length];
                for (int i = 0; i < past.length; i++) {
                    next[i] = (OnnxTensor) r.get(presentNames[i]).orElseThrow();
                }
                releasePast();
                System.arraycopy(next, 0, past, 0, past.length);
                previous = r;
                length += n;
                return logits;
            } catch (OrtException e) {
                throw new OnnxRuntimeException("ONNX Runtime run failed: " + e.getMessage(), e);
            }
        }

        private float[][] unbatch(OnnxTensor t, int n) {
            FloatBuffer fb = t.getFloatBuffer();
            int v = info.vocabSize();
            float[][] out = new float[n][v];
            for (int i = 0; i < n; i++) {
                fb.get(out[i]);
            }
            return out;
        }

        private void releasePast() {
            if (previous != null) {
                previous.close();
                previous = null;
            } else {
                for (OnnxValue p : past) {
                    p.close();
                }
            }
        }

        @Override
        public int length() {
            return length;
        }

        @Override
        public void close() {
            releasePast();
            if (logitsOut != null) {
                logitsOut.close();
            }
        }
    }
}
