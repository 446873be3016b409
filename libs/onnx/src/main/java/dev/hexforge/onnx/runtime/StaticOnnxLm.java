package dev.hexforge.onnx.runtime;

import ai.onnxruntime.OnnxTensor;
import ai.onnxruntime.OrtEnvironment;
import ai.onnxruntime.OrtException;
import ai.onnxruntime.OrtLoraAdapter;
import ai.onnxruntime.OrtSession;
import dev.hexforge.checkpoint.ModelConfig;
import dev.hexforge.contracts.NpuLimits;
import dev.hexforge.forward.Rope;
import dev.hexforge.generate.CausalLm;
import dev.hexforge.generate.DecodeSession;
import dev.hexforge.onnx.export.ExportInfo;
import dev.hexforge.onnx.export.GenieIo;
import dev.hexforge.onnx.export.GraphParts;
import dev.hexforge.onnx.export.Variant;

import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Runs a static export the way an NPU host does: prompts in chunks through the prompt graph (padded to its length),
 * then one token at a time through the token graph. The host keeps the KV cache in a fixed buffer of
 * {@code contextLength} slots per layer, feeds the first {@code context - seq} slots as past with an additive mask
 * marking which are filled, and appends the new entries each graph returns. A graph split into parts runs as a
 * pipeline: each part takes the hidden states the one before returned, with its own layers' cache. A Genie export
 * ({@link GenieIo}) runs the same way with Genie's interface: the host computes each position's cos / sin from the
 * model's config, as Genie does, and keeps the keys transposed.
 */
public final class StaticOnnxLm implements OnnxCausalLm {
    private final Path dir;
    private final ExportInfo info;
    private List<Part> prompt;
    private List<Part> token;
    private final OrtEnvironment env = OrtEnvironment.getEnvironment();
    private final boolean genie;
    /** Genie's: the model's RoPE tables over the context, [ctx, head_dim] (cat(freqs, freqs) per position). */
    private final Rope rope;

    /** One graph of a pipeline with the layers whose cache it takes and returns, and the inputs it declares. */
    private record Part(OrtSession session, int from, int to, boolean first, boolean last, Set<String> inputs,
                        OrtLoraAdapter lora) {
        Part with(LoraFeed feed) {
            return new Part(session, from, to, first, last, inputs, feed.forSession(session));
        }
    }

    /** The feed of the graphs' LoRA inputs: each part's adapter. */
    private LoraFeed loraFeed;

    public StaticOnnxLm(Path dir, ExportInfo info, int threads, Map<String, String> qnn, Path profileDir) {
        this(dir, info, threads, qnn, profileDir, LoraFeed.open(dir, info, null));
    }

    /** @param lora the LoRA inputs' feed, owned (closed) by this model from here */
    StaticOnnxLm(Path dir, ExportInfo info, int threads, Map<String, String> qnn, Path profileDir, LoraFeed lora) {
        this.dir = dir;
        this.info = info;
        this.loraFeed = lora;
        this.genie = info.variant() == Variant.GENIE;
        this.rope = genie ? Rope.of(ModelConfig.read(dir), info.contextLength()) : null;
        List<Part> p = new ArrayList<>();
        List<Part> t = new ArrayList<>();
        try {
            open(dir, "prompt", threads, qnn, profileDir, p);
            open(dir, "token", threads, qnn, profileDir, t);
        } catch (RuntimeException e) {
            p.forEach(x -> closeQuietly(x.session()));
            t.forEach(x -> closeQuietly(x.session()));
            lora.close();
            throw e;
        }
        this.prompt = List.copyOf(p);
        this.token = List.copyOf(t);
    }

    private void open(Path dir, String kind, int threads, Map<String, String> qnn, Path profileDir, List<Part> into) {
        for (String role : info.roles(kind)) {
            Path profile = profileDir == null ? null : profileDir.resolve(role);
            OrtSession s = info.quantizedIo() ? OrtSessions.openFloatBoundary(info.graph(dir, role), threads, qnn, profile)
                    : OrtSessions.open(info.graph(dir, role), threads, qnn, profile);
            int from = Integer.MAX_VALUE;
            int to = 0;
            boolean first = s.getInputNames().contains("input_ids");
            for (int l = 0; l < info.numLayers(); l++) {
                if (s.getInputNames().contains(keyIn(l))) {
                    from = Math.min(from, l);
                    to = Math.max(to, l + 1);
                }
            }
            if (from == Integer.MAX_VALUE) {
                from = first ? 0 : info.numLayers(); // a part with the embedding or the head only
                to = from;
            }
            OrtLoraAdapter adapter;
            try {
                adapter = loraFeed.forSession(s);
            } catch (RuntimeException e) {
                closeQuietly(s);
                throw e;
            }
            into.add(new Part(s, from, to, first, s.getOutputNames().contains("logits"), Set.copyOf(s.getInputNames()), adapter));
        }
    }

    private String keyIn(int layer) {
        return genie ? GenieIo.keyIn(layer) : "past_key_values." + layer + ".key";
    }

    private String valueIn(int layer) {
        return genie ? GenieIo.valueIn(layer) : "past_key_values." + layer + ".value";
    }

    private String keyOut(int layer) {
        return genie ? GenieIo.keyOut(layer) : "present." + layer + ".key";
    }

    private String valueOut(int layer) {
        return genie ? GenieIo.valueOut(layer) : "present." + layer + ".value";
    }

    private static void closeQuietly(OrtSession s) {
        try {
            s.close();
        } catch (OrtException ignored) {
            // closing after a failed open
        }
    }

    @Override
    public int vocabSize() {
        return info.vocabSize();
    }

    /** The static graphs' context; a Genie export's is the dialog Genie runs on it, the context less AR-N. */
    @Override
    public int maxContext() {
        return genie ? NpuLimits.genieDialogTokens(info.contextLength(), info.promptLength()) : info.contextLength();
    }

    @Override
    public String contextLimit() {
        return genie ? NpuLimits.genieDialogLimit(info.contextLength(), info.promptLength())
                : "the static graphs' context of " + info.contextLength();
    }

    @Override
    public void useAdapter(String adapter) {
        LoraFeed next = LoraFeed.open(dir, info, adapter);
        List<Part> p;
        List<Part> t;
        try {
            p = prompt.stream().map(x -> x.with(next)).toList();
            t = token.stream().map(x -> x.with(next)).toList();
        } catch (RuntimeException e) {
            next.close();
            throw e;
        }
        LoraFeed previous = loraFeed;
        loraFeed = next;
        prompt = p;
        token = t;
        previous.close();
    }

    @Override
    public DecodeSession start(int capacity) {
        if (capacity > maxContext()) {
            throw new IllegalArgumentException("asked for " + capacity + " positions, over " + contextLimit()
                    + " (export with a larger export.ctx)");
        }
        return new Session();
    }

    @Override
    public void close() {
        try {
            for (Part p : prompt) {
                p.session().close();
            }
            for (Part p : token) {
                p.session().close();
            }
        } catch (OrtException e) {
            throw new OnnxRuntimeException("closing sessions: " + e.getMessage(), e);
        } finally {
            loraFeed.close();
        }
    }

    private final class Session implements DecodeSession {
        private final int ctx = info.contextLength();
        private final int kvh = info.numKvHeads();
        private final int d = info.headDim();
        /** Per layer, [kvh, ctx, d]; a Genie export's keys as Genie caches them, [kvh, d, ctx]. */
        private final float[][] keys = new float[info.numLayers()][kvh * ctx * d];
        private final float[][] values = new float[info.numLayers()][kvh * ctx * d];
        private int length;

        @Override
        public float[][] appendAll(int[] ids) {
            if (length + ids.length > ctx) {
                throw new IllegalArgumentException("sequence of " + (length + ids.length) + " tokens exceeds the context of "
                        + ctx + " positions");
            }
            float[][] out = new float[ids.length][];
            int done = 0;
            while (done < ids.length) {
                int remaining = ids.length - done;
                boolean usePrompt = remaining > 1 && length <= ctx - info.promptLength();
                int n = usePrompt ? Math.min(remaining, info.promptLength()) : 1;
                int[] chunk = Arrays.copyOfRange(ids, done, done + n);
                float[][] logits = run(usePrompt ? prompt : token, usePrompt ? info.promptLength() : 1, chunk);
                System.arraycopy(logits, 0, out, done, n);
                done += n;
            }
            return out;
        }

        private float[][] run(List<Part> graph, int seq, int[] chunk) {
            int n = chunk.length;
            int past = ctx - seq;
            int[] idBuf = StaticInputs.ids(chunk, seq);
            int[] posBuf = StaticInputs.positions(length, seq, ctx);
            float[] mask = StaticInputs.mask(length, seq, ctx, info.maskNegative());
            long[] pastShape = genie ? new long[]{kvh, 1, past, d} : new long[]{1, kvh, past, d};
            long[] pastKeyShape = genie ? new long[]{kvh, 1, d, past} : pastShape;
            long[] halfShape = {1, 1, seq, d / 2};
            OnnxTensor hidden = null;
            try (OnnxTensor ids = OnnxTensor.createTensor(env, IntBuffer.wrap(idBuf), new long[]{1, seq});
                 OnnxTensor pos = OnnxTensor.createTensor(env, IntBuffer.wrap(posBuf), new long[]{1, seq});
                 OnnxTensor cos = genie ? OnnxTensor.createTensor(env, StaticInputs.ropeHalf(rope.cos(), d, posBuf), halfShape) : null;
                 OnnxTensor sin = genie ? OnnxTensor.createTensor(env, StaticInputs.ropeHalf(rope.sin(), d, posBuf), halfShape) : null;
                 OnnxTensor maskT = OnnxTensor.createTensor(env, FloatBuffer.wrap(mask), new long[]{1, 1, seq, ctx})) {
                float[][] logits = null;
                // what every part may take besides its own layers' cache
                Map<String, OnnxTensor> shared = new HashMap<>(Map.of("position_ids", pos, "attention_mask", maskT));
                if (genie) {
                    shared.put(GenieIo.COS, cos);
                    shared.put(GenieIo.SIN, sin);
                }
                for (Part part : graph) {
                    Map<String, OnnxTensor> in = new HashMap<>();
                    try {
                        if (part.first()) {
                            in.put("input_ids", ids);
                        } else {
                            in.put(GraphParts.hidden(part.from()), hidden);
                        }
                        shared.forEach((name, t) -> {
                            if (part.inputs().contains(name)) {
                                in.put(name, t);
                            }
                        });
                        for (int l = part.from(); l < part.to(); l++) {
                            FloatBuffer k = genie ? pastKeySlots(keys[l], past) : pastSlots(keys[l], past);
                            in.put(keyIn(l), OnnxTensor.createTensor(env, k, pastKeyShape));
                            in.put(valueIn(l), OnnxTensor.createTensor(env, pastSlots(values[l], past), pastShape));
                        }
                        OrtSession session = part.session();
                        try (OrtSession.Result r = OrtRuns.run(part.lora(), o -> session.run(in, o))) {
                            if (part.last()) {
                                FloatBuffer lb = ((OnnxTensor) r.get("logits").orElseThrow()).getFloatBuffer();
                                logits = new float[n][info.vocabSize()];
                                for (int i = 0; i < n; i++) {
                                    lb.get(logits[i]);
                                }
                            } else {
                                String out = GraphParts.hidden(part.to());
                                OnnxTensor h = (OnnxTensor) r.get(out).orElseThrow();
                                FloatBuffer copy = h.getFloatBuffer(); // already a copy, owned by this call
                                if (hidden != null) {
                                    hidden.close();
                                }
                                hidden = OnnxTensor.createTensor(env, copy, h.getInfo().getShape());
                            }
                            for (int l = part.from(); l < part.to(); l++) {
                                FloatBuffer k = ((OnnxTensor) r.get(keyOut(l)).orElseThrow()).getFloatBuffer();
                                if (genie) {
                                    appendTransposed(keys[l], k, seq, n);
                                } else {
                                    append(keys[l], k, seq, n);
                                }
                                append(values[l], ((OnnxTensor) r.get(valueOut(l)).orElseThrow()).getFloatBuffer(), seq, n);
                            }
                        }
                    } finally {
                        for (int l = part.from(); l < part.to(); l++) {
                            for (String name : List.of(keyIn(l), valueIn(l))) {
                                if (in.get(name) != null) {
                                    in.get(name).close();
                                }
                            }
                        }
                    }
                }
                length += n;
                return logits;
            } catch (OrtException e) {
                throw new OnnxRuntimeException("ONNX Runtime run failed: " + e.getMessage(), e);
            } finally {
                if (hidden != null) {
                    hidden.close();
                }
            }
        }

        /** The first {@code past} slots of every head of a [kvh, ctx, d] cache, as [kvh, past, d]. */
        private FloatBuffer pastSlots(float[] cache, int past) {
            FloatBuffer b = FloatBuffer.allocate(kvh * past * d);
            for (int h = 0; h < kvh; h++) {
                b.put(cache, h * ctx * d, past * d);
            }
            return b.flip();
        }

        /** The first {@code past} slots of a Genie key cache kept transposed, [kvh, d, ctx], as [kvh, d, past]. */
        private FloatBuffer pastKeySlots(float[] cache, int past) {
            FloatBuffer b = FloatBuffer.allocate(kvh * d * past);
            for (int row = 0; row < kvh * d; row++) {
                b.put(cache, row * ctx, past);
            }
            return b.flip();
        }

        /** Copies the first {@code n} of {@code seq} new keys of Genie's [kvh, d, seq] into slots [length, length + n). */
        private void appendTransposed(float[] cache, FloatBuffer present, int seq, int n) {
            for (int row = 0; row < kvh * d; row++) {
                present.position(row * seq);
                present.get(cache, row * ctx + length, n);
            }
        }

        /** Copies the first {@code n} of {@code seq} new entries per head into slots [length, length + n). */
        private void append(float[] cache, FloatBuffer present, int seq, int n) {
            for (int h = 0; h < kvh; h++) {
                present.position(h * seq * d);
                present.get(cache, h * ctx * d + length * d, n * d);
            }
        }

        @Override
        public int length() {
            return length;
        }
    }
}
