package dev.hexforge.onnx.runtime;

import ai.onnxruntime.NodeInfo;
import ai.onnxruntime.OnnxTensor;
import ai.onnxruntime.OrtEnvironment;
import ai.onnxruntime.OrtException;
import ai.onnxruntime.OrtLoraAdapter;
import ai.onnxruntime.OrtSession;
import ai.onnxruntime.TensorInfo;
import dev.hexforge.checkpoint.ModelConfig;
import dev.hexforge.eval.Perplexity;
import dev.hexforge.forward.Rope;
import dev.hexforge.onnx.export.ExportInfo;
import dev.hexforge.onnx.export.GenieIo;
import dev.hexforge.onnx.export.Variant;
import dev.hexforge.onnx.lora.LoraInputs;

import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;

/**
 * Perplexity of a static or Genie export scored a part at a time: every window (a fresh context, one prompt-graph
 * run, as a phone runs a prompt) goes through the first part's graph, then every window through the next, the
 * windows' hidden states kept between parts. One part's session is open at a time and the token graphs are never
 * loaded, so a model too big for one session is scored in the memory of its largest part. The same numbers as running
 * each window through the whole pipeline ({@link StaticOnnxLm}): the same graphs on the same inputs, the empty past
 * cache as zeros.
 */
public final class PartwisePrompt {
    private PartwisePrompt() {
    }

    /** Whether an export can be scored this way in windows of {@code window} tokens: its prompt graphs' length. */
    public static boolean scores(ExportInfo info, int window) {
        return info.variant().fixedShapes() && info.promptLength() == window;
    }

    public static Perplexity.Scored score(Path dir, int[] ids, int threads) {
        return score(dir, ids, threads, null);
    }

    /** As {@link #score(Path, int[], int)}, with the LoRA adapter {@code adapter} ({@link LoraFeed#open}; null: the base). */
    public static Perplexity.Scored score(Path dir, int[] ids, int threads, String adapter) {
        ExportInfo info = ExportInfo.read(dir);
        if (!info.variant().fixedShapes()) {
            throw new IllegalArgumentException(dir + ": scoring by parts takes a static or Genie export, not " + info.variant().id());
        }
        int seq = info.promptLength();
        int ctx = info.contextLength();
        int windows = ids.length / seq;
        if (windows == 0) {
            throw new IllegalArgumentException("the text has " + ids.length + " tokens, fewer than one window of " + seq);
        }
        OrtEnvironment env = OrtEnvironment.getEnvironment();
        int[] positions = StaticInputs.positions(0, seq, ctx);
        Map<String, OnnxTensor> shared = new HashMap<>();
        Perplexity.Windows scored = new Perplexity.Windows(windows, seq);
        FloatBuffer[] hidden = new FloatBuffer[windows];
        long[][] hiddenShape = new long[windows][];
        try (LoraFeed lora = LoraFeed.open(dir, info, adapter)) {
            shared.put("position_ids", OnnxTensor.createTensor(env, IntBuffer.wrap(positions), new long[]{1, seq}));
            shared.put("attention_mask", OnnxTensor.createTensor(env,
                    FloatBuffer.wrap(StaticInputs.mask(0, seq, ctx, info.maskNegative())), new long[]{1, 1, seq, ctx}));
            if (info.variant() == Variant.GENIE) {
                Rope rope = Rope.of(ModelConfig.read(dir), ctx);
                long[] half = {1, 1, seq, info.headDim() / 2};
                shared.put(GenieIo.COS, OnnxTensor.createTensor(env, StaticInputs.ropeHalf(rope.cos(), info.headDim(), positions), half));
                shared.put(GenieIo.SIN, OnnxTensor.createTensor(env, StaticInputs.ropeHalf(rope.sin(), info.headDim(), positions), half));
            }
            for (String role : info.roles("prompt")) {
                Path graph = info.graph(dir, role);
                try (OrtSession session = info.quantizedIo() ? OrtSessions.openFloatBoundary(graph, threads, null, null)
                        : OrtSessions.open(graph, threads)) {
                    runPart(env, session, lora.forSession(session), info, ids, seq, shared, scored, hidden, hiddenShape);
                }
            }
        } catch (OrtException e) {
            throw new OnnxRuntimeException(dir + ": ONNX Runtime run failed: " + e.getMessage(), e);
        } finally {
            shared.values().forEach(OnnxTensor::close);
        }
        return scored.result(ids.length - windows * seq);
    }

    /** Every window through one part: its hidden states replaced by the part's, or scored when the part ends in logits. */
    private static void runPart(OrtEnvironment env, OrtSession session, OrtLoraAdapter lora, ExportInfo info, int[] ids, int seq,
                                Map<String, OnnxTensor> shared, Perplexity.Windows scored, FloatBuffer[] hidden,
                                long[][] hiddenShape) throws OrtException {
        String hiddenIn = null;
        Map<String, OnnxTensor> empty = new HashMap<>(); // the past cache's inputs: nothing cached yet
        try {
            for (Map.Entry<String, NodeInfo> e : session.getInputInfo().entrySet()) {
                String name = e.getKey();
                if (name.startsWith("hidden_states.")) {
                    hiddenIn = name;
                } else if (!name.equals("input_ids") && !shared.containsKey(name) && !LoraInputs.isInput(name)) {
                    long[] shape = ((TensorInfo) e.getValue().getInfo()).getShape();
                    empty.put(name, OnnxTensor.createTensor(env, FloatBuffer.allocate((int) Arrays.stream(shape).reduce(1, (a, b) -> a * b)),
                            shape));
                }
            }
            String hiddenOut = session.getOutputNames().stream().filter(n -> n.startsWith("hidden_states.")).findFirst().orElse(null);
            boolean last = session.getOutputNames().contains("logits");
            for (int w = 0; w < hidden.length; w++) {
                int[] window = Arrays.copyOfRange(ids, w * seq, (w + 1) * seq);
                OnnxTensor x = hiddenIn == null ? OnnxTensor.createTensor(env, IntBuffer.wrap(window), new long[]{1, seq})
                        : OnnxTensor.createTensor(env, hidden[w], hiddenShape[w]);
                try {
                    Map<String, OnnxTensor> in = new HashMap<>(empty);
                    in.put(hiddenIn == null ? "input_ids" : hiddenIn, x);
                    shared.forEach((name, t) -> {
                        if (session.getInputNames().contains(name)) {
                            in.put(name, t);
                        }
                    });
                    try (OrtSession.Result r = OrtRuns.run(lora, o -> session.run(in, o))) {
                        if (last) {
                            FloatBuffer lb = ((OnnxTensor) r.get("logits").orElseThrow()).getFloatBuffer();
                            float[][] logits = new float[seq][info.vocabSize()];
                            for (float[] row : logits) {
                                lb.get(row);
                            }
                            scored.add(logits, window);
                            hidden[w] = null;
                        } else {
                            OnnxTensor h = (OnnxTensor) r.get(hiddenOut).orElseThrow();
                            hidden[w] = h.getFloatBuffer(); // a copy, owned here
                            hiddenShape[w] = h.getInfo().getShape();
                        }
                    }
                } finally {
                    x.close();
                }
            }
        } finally {
            empty.values().forEach(OnnxTensor::close);
        }
    }
}
