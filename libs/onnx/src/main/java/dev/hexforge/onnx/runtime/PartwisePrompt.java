package dev.hexforge.onnx.runtime;

import ai.onnxruntime.OnnxTensor;
import ai.onnxruntime.OrtEnvironment;
import ai.onnxruntime.OrtException;
import ai.onnxruntime.OrtSession;
import dev.hexforge.eval.Perplexity;
import dev.hexforge.onnx.export.ExportInfo;
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

/**
 * Perplexity of a static export scored a part at a time: every window (a fresh context, one prompt-graph run, as a
 * phone runs a prompt) goes through the first part's graph, then every window through the next, the windows' hidden
 * states kept between parts. One part's session is open at a time and the token graphs are never loaded, so a model
 * too big for one session is scored in the memory of its largest part. The same numbers as running each window
 * through the whole pipeline ({@link StaticOnnxLm}): the same graphs on the same inputs.
 */
public final class PartwisePrompt {
    private PartwisePrompt() {
    }

    public static Perplexity.Scored score(Path dir, int[] ids, int threads) {
        ExportInfo info = ExportInfo.read(dir);
        if (info.variant() != Variant.STATIC) {
            throw new IllegalArgumentException(dir + ": scoring by parts takes a static export, not " + info.variant().id());
        }
        int seq = info.promptLength();
        int ctx = info.contextLength();
        int windows = ids.length / seq;
        if (windows == 0) {
            throw new IllegalArgumentException("the text has " + ids.length + " tokens, fewer than one window of " + seq);
        }
        OrtEnvironment env = OrtEnvironment.getEnvironment();
        int kvh = info.numKvHeads();
        int d = info.headDim();
        long[] pastShape = {1, kvh, ctx - seq, d};
        float[] zeros = new float[kvh * (ctx - seq) * d];
        Perplexity.Windows scored = new Perplexity.Windows(windows, seq);
        FloatBuffer[] hidden = new FloatBuffer[windows];
        long[][] hiddenShape = new long[windows][];
        List<String> roles = info.roles("prompt");
        try (OnnxTensor pos = OnnxTensor.createTensor(env, IntBuffer.wrap(StaticInputs.positions(0, seq, ctx)), new long[]{1, seq});
             OnnxTensor mask = OnnxTensor.createTensor(env, FloatBuffer.wrap(StaticInputs.mask(0, seq, ctx, info.maskNegative())),
                     new long[]{1, 1, seq, ctx});
             OnnxTensor past = OnnxTensor.createTensor(env, FloatBuffer.wrap(zeros), pastShape)) {
            for (String role : roles) {
                Path graph = info.graph(dir, role);
                try (OrtSession session = info.quantizedIo() ? OrtSessions.openFloatBoundary(graph, threads, null, null)
                        : OrtSessions.open(graph, threads)) {
                    boolean first = session.getInputNames().contains("input_ids");
                    boolean last = session.getOutputNames().contains("logits");
                    List<String> pasts = new ArrayList<>();
                    String hiddenIn = null;
                    for (String name : session.getInputNames()) {
                        if (name.startsWith("past_key_values.")) {
                            pasts.add(name);
                        } else if (name.startsWith("hidden_states.")) {
                            hiddenIn = name;
                        }
                    }
                    String hiddenOut = null;
                    for (String name : session.getOutputNames()) {
                        if (name.startsWith("hidden_states.")) {
                            hiddenOut = name;
                        }
                    }
                    for (int w = 0; w < windows; w++) {
                        int[] window = Arrays.copyOfRange(ids, w * seq, (w + 1) * seq);
                        OnnxTensor x = first ? OnnxTensor.createTensor(env, IntBuffer.wrap(window), new long[]{1, seq})
                                : OnnxTensor.createTensor(env, hidden[w], hiddenShape[w]);
                        try {
                            Map<String, OnnxTensor> in = new HashMap<>();
                            in.put(first ? "input_ids" : hiddenIn, x);
                            if (session.getInputNames().contains("position_ids")) {
                                in.put("position_ids", pos);
                            }
                            if (session.getInputNames().contains("attention_mask")) {
                                in.put("attention_mask", mask);
                            }
                            pasts.forEach(n -> in.put(n, past));
                            String next = hiddenOut;
                            try (OrtSession.Result r = OrtRuns.run(o -> session.run(in, o))) {
                                if (last) {
                                    FloatBuffer lb = ((OnnxTensor) r.get("logits").orElseThrow()).getFloatBuffer();
                                    float[][] logits = new float[seq][info.vocabSize()];
                                    for (float[] row : logits) {
                                        lb.get(row);
                                    }
                                    scored.add(logits, window);
                                    hidden[w] = null;
                                } else {
                                    OnnxTensor h = (OnnxTensor) r.get(next).orElseThrow();
                                    hidden[w] = h.getFloatBuffer(); // a copy, owned here
                                    hiddenShape[w] = h.getInfo().getShape();
                                }
                            }
                        } finally {
                            x.close();
                        }
                    }
                }
            }
        } catch (OrtException e) {
            throw new OnnxRuntimeException(dir + ": ONNX Runtime run failed: " + e.getMessage(), e);
        }
        return scored.result(ids.length - windows * seq);
    }
}
