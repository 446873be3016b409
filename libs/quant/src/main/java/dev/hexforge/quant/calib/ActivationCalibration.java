package dev.hexforge.quant.calib;

import ai.onnxruntime.NodeInfo;
import ai.onnxruntime.OnnxTensor;
import ai.onnxruntime.OnnxValue;
import ai.onnxruntime.OrtEnvironment;
import ai.onnxruntime.OrtException;
import ai.onnxruntime.OrtSession;
import ai.onnxruntime.TensorInfo;
import dev.hexforge.checkpoint.Checkpoint;
import dev.hexforge.checkpoint.ModelConfig;
import dev.hexforge.onnx.export.DecoderExporter;
import dev.hexforge.onnx.export.ExportOptions;
import dev.hexforge.onnx.export.GraphParts;
import dev.hexforge.onnx.export.LinearFormat;
import dev.hexforge.onnx.lora.LoraCalibration;
import dev.hexforge.onnx.lora.LoraInputs;
import dev.hexforge.onnx.qdq.ActivationEncodings;
import dev.hexforge.onnx.qdq.Activations;
import dev.hexforge.onnx.qdq.Encoding;
import dev.hexforge.onnx.runtime.LargeStack;
import dev.hexforge.onnx.runtime.OnnxRuntimeException;
import dev.hexforge.onnx.runtime.OrtRuns;
import dev.hexforge.onnx.runtime.OrtSessions;
import dev.hexforge.onnx.runtime.StaticInputs;
import dev.hexforge.progress.Progress;
import dev.hexforge.quant.QuantizationException;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The ranges of every activation of the static graphs, measured by running calibration text through the model as
 * ONNX Runtime runs it (weights as quantized), one decoder layer at a time: each layer is its own graph, loaded once,
 * fed every chunk's hidden states from the layer before, and returning every float activation under the name it has
 * in the full graphs. The heap holds one layer's session and the chunks' hidden states.
 *
 * <p>Ranges, chosen by measurement (docs/npu-precision.md): the KV cache entries by the clipping that minimises the
 * squared error of their values (searched on a sample); every other activation, at 16 or 8 bits, by its minimum and
 * maximum (the squared-error search raised perplexity there); the attention mask exactly (0 and
 * its negative); the masked attention scores by their unmasked values down to {@link #MASKED_MARGIN} below the
 * smallest, so a masked score still weighs exp(-20) or less after the softmax. A layer's past cache input has its
 * new entries' encoding, so cache slots pass between runs unchanged.
 */
public final class ActivationCalibration {
    /** Chunks of {@link #CHUNK} tokens the ranges are measured over. */
    public static final int DEFAULT_CHUNKS = 32;
    /** Tokens per calibration chunk: the static prompt graph's default length. */
    public static final int CHUNK = ExportOptions.DEFAULT_PROMPT_LENGTH;
    /** How far below the smallest unmasked attention score the masked ones are clamped. */
    public static final double MASKED_MARGIN = 20;
    static final int SAMPLE = 1 << 16;
    /** Values sampled of an activation that is not a cache entry: enough for its signal-to-noise figure. */
    static final int SMALL_SAMPLE = 1 << 12;
    /** The activations with the lowest signal-to-quantization-noise ratio named in the report. */
    static final int NOISIEST = 5;
    private static final float MASKED = -30000f;

    private ActivationCalibration() {
    }

    /**
     * @param sequences calibration token sequences; they are joined and cut into chunks of {@link #CHUNK} tokens (at
     *                  most {@code chunks} of them)
     * @param scratch   an empty folder for the calibration graphs, deleted by the caller
     */
    public static ActivationEncodings run(Checkpoint ckpt, LinearFormat format, List<int[]> sequences, int chunks,
                                          Activations settings, Path scratch, Progress progress) {
        return run(ckpt, format, sequences, chunks, settings, null, scratch, progress);
    }

    /**
     * As {@link #run(Checkpoint, LinearFormat, List, int, Activations, Path, Progress)}, for graphs that take
     * {@code lora}'s inputs (null: none): every chunk runs through the base (the inputs at zero) and through each
     * adapter, and each range covers them all, the adapters' inputs and low-rank products included.
     */
    public static ActivationEncodings run(Checkpoint ckpt, LinearFormat format, List<int[]> sequences, int chunks,
                                          Activations settings, LoraCalibration lora, Path scratch, Progress progress) {
        if (!settings.quantized()) {
            throw new IllegalArgumentException("float activations need no calibration");
        }
        ModelConfig c = ckpt.config();
        int seq = Math.min(CHUNK, c.maxPositionEmbeddings() - 1);
        int ctx = seq + 1;
        List<int[]> pieces = chunks(sequences, seq, chunks);
        if (pieces.isEmpty()) {
            throw new QuantizationException("activation calibration needs at least " + seq + " tokens of calibration text");
        }
        List<Path> parts;
        try {
            parts = DecoderExporter.writeCalibrationParts(ckpt, scratch, format, seq, ctx, lora == null ? null : lora.inputs(),
                    Progress.NONE);
        } catch (IOException e) {
            throw new UncheckedIOException("writing calibration graphs into " + scratch + ": " + e.getMessage(), e);
        }
        Map<String, Encoding> encodings = new LinkedHashMap<>();
        Map<String, Double> noise = new HashMap<>();
        // the base and each adapter: what the graphs will compute, run after run
        List<Map<String, float[]>> variants = new ArrayList<>();
        variants.add(Map.of());
        if (lora != null) {
            variants.addAll(lora.adapters());
        }
        float[][] hidden = new float[pieces.size() * variants.size()][];
        int threads = Runtime.getRuntime().availableProcessors();
        for (int l = 0; l < parts.size(); l++) {
            progress.update("calibrate activations", l, parts.size());
            Map<String, TensorRange> ranges = new LinkedHashMap<>();
            int layer = l;
            LargeStack.call("hexforge-calibration", () -> {
                runLayer(c, parts.get(layer), layer, pieces, variants, hidden, seq, ctx, threads, ranges);
                return null;
            });
            ranges.forEach((name, r) -> {
                Encoding e = encodings.computeIfAbsent(name, n -> choose(n, r, settings));
                if (!name.equals("attention_mask")) {
                    noise.put(name, r.sqnrDb(e));
                }
            });
            for (String kind : List.of("key", "value")) {
                encodings.put("past_key_values." + l + "." + kind, encodings.get("present." + l + "." + kind));
            }
        }
        progress.update("calibrate activations", parts.size(), parts.size());
        List<String> noisiest = noise.entrySet().stream().sorted(Map.Entry.comparingByValue()).limit(NOISIEST)
                .map(e -> String.format("%s (SQNR %.1f dB)", e.getKey(), e.getValue())).toList();
        return new ActivationEncodings(settings, "kv cache: mse; activations: min/max", pieces.size(), noisiest, encodings);
    }

    static List<int[]> chunks(List<int[]> sequences, int seq, int max) {
        List<int[]> out = new ArrayList<>();
        int[] piece = new int[seq];
        int filled = 0;
        for (int[] s : sequences) {
            for (int id : s) {
                piece[filled++] = id;
                if (filled == seq) {
                    out.add(piece);
                    if (out.size() == max) {
                        return out;
                    }
                    piece = new int[seq];
                    filled = 0;
                }
            }
        }
        return out;
    }

    private static void runLayer(ModelConfig c, Path graph, int layer, List<int[]> pieces, List<Map<String, float[]>> variants,
                                 float[][] hidden, int seq, int ctx, int threads, Map<String, TensorRange> ranges)
            throws OrtException {
        OrtEnvironment env = OrtEnvironment.getEnvironment();
        long[] pastShape = {1, c.numKvHeads(), ctx - seq, c.headDim()};
        float[] zeros = new float[c.numKvHeads() * (ctx - seq) * c.headDim()];
        String next = GraphParts.hidden(layer + 1);
        try (OrtSession session = OrtSessions.open(graph, threads, null);
             OnnxTensor pos = OnnxTensor.createTensor(env, IntBuffer.wrap(StaticInputs.positions(0, seq, ctx)), new long[]{1, seq});
             OnnxTensor mask = OnnxTensor.createTensor(env, FloatBuffer.wrap(StaticInputs.mask(0, seq, ctx, DecoderExporter.MASK_NEGATIVE)),
                     new long[]{1, 1, seq, ctx});
             OnnxTensor pastK = OnnxTensor.createTensor(env, FloatBuffer.wrap(zeros), pastShape);
             OnnxTensor pastV = OnnxTensor.createTensor(env, FloatBuffer.wrap(zeros), pastShape)) {
            int runs = pieces.size() * variants.size();
            for (int run = 0; run < runs; run++) {
                int p = run % pieces.size();
                Map<String, OnnxTensor> in = new HashMap<>();
                OnnxTensor x = layer == 0
                        ? OnnxTensor.createTensor(env, IntBuffer.wrap(pieces.get(p)), new long[]{1, seq})
                        : OnnxTensor.createTensor(env, FloatBuffer.wrap(hidden[run]), new long[]{seq, c.hiddenSize()});
                Map<String, OnnxTensor> lora = loraFeeds(env, session, variants.get(run / pieces.size()));
                try {
                    in.putAll(lora);
                    // the adapter's inputs are activations of the graphs too
                    lora.forEach((name, t) -> ranges.computeIfAbsent(name, k -> new TensorRange(runs, SMALL_SAMPLE))
                            .add(t.getFloatBuffer()));
                    in.put(layer == 0 ? "input_ids" : GraphParts.hidden(layer), x);
                    in.put("position_ids", pos);
                    in.put("attention_mask", mask);
                    in.put("past_key_values." + layer + ".key", pastK);
                    in.put("past_key_values." + layer + ".value", pastV);
                    try (OrtSession.Result r = OrtRuns.run(o -> session.run(in, o))) {
                        for (Map.Entry<String, OnnxValue> e : r) {
                            FloatBuffer b = ((OnnxTensor) e.getValue()).getFloatBuffer();
                            if (e.getKey().equals(next)) {
                                hidden[run] = new float[b.remaining()];
                                b.get(hidden[run]);
                                b.rewind();
                            }
                            ranges.computeIfAbsent(e.getKey(), k -> new TensorRange(runs, isCache(k) ? SAMPLE : SMALL_SAMPLE)).add(b);
                        }
                    }
                    // the inputs are activations too: this layer's hidden states and the mask
                    for (String name : List.of(layer == 0 ? "" : GraphParts.hidden(layer), "attention_mask")) {
                        if (!name.isEmpty()) {
                            ranges.computeIfAbsent(name, k -> new TensorRange(runs, SMALL_SAMPLE)).add(in.get(name).getFloatBuffer());
                        }
                    }
                } finally {
                    x.close();
                    lora.values().forEach(OnnxTensor::close);
                }
            }
        } catch (OnnxRuntimeException e) {
            throw new QuantizationException("activation calibration of layer " + layer + ": " + e.getMessage());
        }
    }

    /** The LoRA inputs the layer's graph takes, from the variant's values (zeros where it has none: the base). */
    private static Map<String, OnnxTensor> loraFeeds(OrtEnvironment env, OrtSession session, Map<String, float[]> variant)
            throws OrtException {
        Map<String, OnnxTensor> feeds = new HashMap<>();
        for (Map.Entry<String, NodeInfo> e : session.getInputInfo().entrySet()) {
            if (!LoraInputs.isInput(e.getKey())) {
                continue;
            }
            long[] shape = ((TensorInfo) e.getValue().getInfo()).getShape();
            float[] values = variant.get(e.getKey());
            if (values == null) {
                values = new float[Math.toIntExact(Arrays.stream(shape).reduce(1, (a, b) -> a * b))];
            }
            feeds.put(e.getKey(), OnnxTensor.createTensor(env, FloatBuffer.wrap(values), shape));
        }
        return feeds;
    }

    /** A KV cache entry: a layer's new keys or values, or its past cache input. */
    static boolean isCache(String name) {
        return name.startsWith("present.") || name.startsWith("past_key_values.");
    }

    static Encoding choose(String name, TensorRange r, Activations settings) {
        boolean cache = isCache(name);
        int bits = cache ? settings.kvBits() : settings.bits();
        if (name.equals("attention_mask")) {
            return Encoding.ofRange(r.min, r.max, bits);
        }
        double lo = r.masked ? Math.max(r.min, r.unmaskedMin - MASKED_MARGIN) : r.min;
        double hi = r.max;
        return cache ? r.mse(lo, hi, bits) : Encoding.ofRange(lo, hi, bits);
    }

    /** A tensor's range over the calibration runs, and a strided sample of its unmasked values. */
    static final class TensorRange {
        double min = Double.POSITIVE_INFINITY;
        double max = Double.NEGATIVE_INFINITY;
        double unmaskedMin = Double.POSITIVE_INFINITY;
        boolean masked;
        final float[] sample;
        int sampled;
        private final int runs;

        TensorRange(int runs, int sampleSize) {
            this.runs = runs;
            this.sample = new float[sampleSize];
        }

        void add(FloatBuffer b) {
            int n = b.remaining();
            int stride = Math.max(1, (int) ((long) n * runs / Math.max(1, sample.length)));
            int start = b.position();
            for (int i = 0; i < n; i++) {
                float v = b.get(start + i);
                if (v < min) {
                    min = v;
                }
                if (v > max) {
                    max = v;
                }
                if (v <= MASKED) {
                    masked = true;
                    continue;
                }
                if (v < unmaskedMin) {
                    unmaskedMin = v;
                }
                if (sampled < sample.length && i % stride == 0) {
                    sample[sampled++] = v;
                }
            }
        }

        /** The encoding of [lo, hi] shrunk by the factor (1, 0.98, ... 0.3) whose round trip errs least on the sample. */
        Encoding mse(double lo, double hi, int bits) {
            Encoding best = Encoding.ofRange(lo, hi, bits);
            double bestError = error(best, lo, hi);
            for (int step = 1; step <= 35; step++) {
                double f = 1 - 0.02 * step;
                Encoding e = Encoding.ofRange(lo * f, hi * f, bits);
                double err = error(e, lo, hi);
                if (err < bestError) {
                    bestError = err;
                    best = e;
                }
            }
            return best;
        }

        /** Signal to quantization noise on the sample, in dB (infinite when the encoding represents it exactly). */
        double sqnrDb(Encoding e) {
            double signal = 0;
            double noise = 0;
            for (int i = 0; i < sampled; i++) {
                double d = sample[i] - e.roundTrip(sample[i]);
                signal += (double) sample[i] * sample[i];
                noise += d * d;
            }
            return noise == 0 ? Double.POSITIVE_INFINITY : 10 * Math.log10(signal / noise);
        }

        private double error(Encoding e, double lo, double hi) {
            double sum = 0;
            for (int i = 0; i < sampled; i++) {
                double d = sample[i] - e.roundTrip(sample[i]);
                sum += d * d;
            }
            return sum;
        }
    }
}
