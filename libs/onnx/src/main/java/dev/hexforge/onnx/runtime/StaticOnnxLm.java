package dev.hexforge.onnx.runtime;

import ai.onnxruntime.OnnxTensor;
import ai.onnxruntime.OrtEnvironment;
import ai.onnxruntime.OrtException;
import ai.onnxruntime.OrtSession;
import dev.hexforge.generate.CausalLm;
import dev.hexforge.generate.DecodeSession;
import dev.hexforge.onnx.export.ExportInfo;

import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

/**
 * Runs a static export the way an NPU host does: prompts in chunks through the prompt graph (padded to its length),
 * then one token at a time through the token graph. The host keeps the KV cache in a fixed buffer of
 * {@code contextLength} slots per layer, feeds the first {@code context - seq} slots as past with an additive mask
 * marking which are filled, and appends the new entries each graph returns.
 */
public final class StaticOnnxLm implements CausalLm {
    private final ExportInfo info;
    private final OrtSession prompt;
    private final OrtSession token;
    private final OrtEnvironment env = OrtEnvironment.getEnvironment();

    public StaticOnnxLm(Path dir, ExportInfo info, int threads, java.util.Map<String, String> qnn) {
        this.info = info;
        this.prompt = OrtSessions.open(info.graph(dir, "prompt"), threads, qnn);
        this.token = OrtSessions.open(info.graph(dir, "token"), threads, qnn);
    }

    @Override
    public int vocabSize() {
        return info.vocabSize();
    }

    @Override
    public int maxContext() {
        return info.contextLength();
    }

    @Override
    public DecodeSession start(int capacity) {
        if (capacity > info.contextLength()) {
            throw new IllegalArgumentException("asked for " + capacity + " positions; the static graphs hold "
                    + info.contextLength() + " (export with a larger --ctx)");
        }
        return new Session();
    }

    @Override
    public void close() {
        try {
            prompt.close();
            token.close();
        } catch (OrtException e) {
            throw new OnnxRuntimeException("closing sessions: " + e.getMessage(), e);
        }
    }

    private final class Session implements DecodeSession {
        private final int ctx = info.contextLength();
        private final int kvh = info.numKvHeads();
        private final int d = info.headDim();
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
                int[] chunk = java.util.Arrays.copyOfRange(ids, done, done + n);
                float[][] logits = run(usePrompt ? prompt : token, usePrompt ? info.promptLength() : 1, chunk);
                System.arraycopy(logits, 0, out, done, n);
                done += n;
            }
            return out;
        }

        private float[][] run(OrtSession graph, int seq, int[] chunk) {
            int n = chunk.length;
            int past = ctx - seq;
            int[] idBuf = StaticInputs.ids(chunk, seq);
            int[] posBuf = StaticInputs.positions(length, seq, ctx);
            float[] mask = StaticInputs.mask(length, seq, ctx, info.maskNegative());
            Map<String, OnnxTensor> in = new HashMap<>();
            try {
                in.put("input_ids", OnnxTensor.createTensor(env, IntBuffer.wrap(idBuf), new long[]{1, seq}));
                in.put("position_ids", OnnxTensor.createTensor(env, IntBuffer.wrap(posBuf), new long[]{1, seq}));
                in.put("attention_mask", OnnxTensor.createTensor(env, FloatBuffer.wrap(mask), new long[]{1, 1, seq, ctx}));
                long[] pastShape = {1, kvh, past, d};
                for (int l = 0; l < info.numLayers(); l++) {
                    in.put("past_key_values." + l + ".key", OnnxTensor.createTensor(env, pastSlots(keys[l], past), pastShape));
                    in.put("past_key_values." + l + ".value", OnnxTensor.createTensor(env, pastSlots(values[l], past), pastShape));
                }
                try (OrtSession.Result r = graph.run(in)) {
                    FloatBuffer lb = ((OnnxTensor) r.get("logits").orElseThrow()).getFloatBuffer();
                    float[][] logits = new float[n][info.vocabSize()];
                    for (int i = 0; i < n; i++) {
                        lb.get(logits[i]);
                    }
                    for (int l = 0; l < info.numLayers(); l++) {
                        append(keys[l], ((OnnxTensor) r.get("present." + l + ".key").orElseThrow()).getFloatBuffer(), seq, n);
                        append(values[l], ((OnnxTensor) r.get("present." + l + ".value").orElseThrow()).getFloatBuffer(), seq, n);
                    }
                    length += n;
                    return logits;
                }
            } catch (OrtException e) {
                throw new OnnxRuntimeException("ONNX Runtime run failed: " + e.getMessage(), e);
            } finally {
                in.values().forEach(OnnxTensor::close);
            }
        }

        /** The first {@code past} slots of every head, as [kvh, past, d]. */
        private FloatBuffer pastSlots(float[] cache, int past) {
            FloatBuffer b = FloatBuffer.allocate(kvh * past * d);
            for (int h = 0; h < kvh; h++) {
                b.put(cache, h * ctx * d, past * d);
            }
            return b.flip();
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
