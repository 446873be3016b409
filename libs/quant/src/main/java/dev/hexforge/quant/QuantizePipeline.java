package dev.hexforge.quant;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import dev.hexforge.checkpoint.Checkpoint;
import dev.hexforge.concurrent.Background;
import dev.hexforge.eval.Perplexity;
import dev.hexforge.forward.DecoderWeights;
import dev.hexforge.io.Folders;
import dev.hexforge.progress.Progress;
import dev.hexforge.onnx.export.LinearFormat;
import dev.hexforge.quant.gate.FloatBaseline;
import dev.hexforge.quant.gate.GateText;
import dev.hexforge.quant.gate.OnnxScoring;
import dev.hexforge.quant.onnx.MatMulNBitsFormat;
import dev.hexforge.quant.onnx.QdqFormat;
import dev.hexforge.quant.awq.Awq;
import dev.hexforge.onnx.qdq.ActivationEncodings;
import dev.hexforge.quant.calib.ActivationCalibration;
import dev.hexforge.quant.calib.CalibrationSet;
import dev.hexforge.quant.calib.CoverageReport;
import dev.hexforge.quant.calib.LayerSource;
import dev.hexforge.quant.gptq.GptqRunner;
import dev.hexforge.tokenizer.Tokenizer;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The quantize pass: quantize the checkpoint's linears (RTN, or GPTQ / AWQ on calibration data) and, by RTN, its
 * token embedding and LM head; measure the accuracy cost on the model as it ships, apply the gate, and only when it
 * passes keep the quantized checkpoint ({@code OUT/checkpoint}, see {@link QuantizedCheckpoint}; written in the
 * scratch folder while the gate scores, moved into place when it passes). The report
 * ({@code OUT/quantization_report.json}) is written either way.
 *
 * <p>The gate scores the evaluation text's first windows (at most {@code evalTokens} tokens) with ONNX Runtime on
 * this CPU: the quantized model as a MatMulNBits export at accuracy level 4 (int8 activations, the CPU fast path;
 * QDQ where MatMulNBits cannot hold the spec), the float model as a float export whose scores are cached by the
 * model's digest. Perplexity rise and teacher-forced top-1 agreement come from the same windows.
 *
 * <p>With quantized activations ({@link QuantizeOptions#activations}), the activation ranges are calibrated on the
 * weight-quantized model layer by layer ({@link ActivationCalibration}), the fully quantized static graph is scored on
 * the same windows, the gate holds both rises, and the encodings are kept beside the checkpoint
 * ({@link ActivationEncodings#FILE}) for the export.
 */
public final class QuantizePipeline {
    public static final String REPORT = "quantization_report.json";
    /** The quantized checkpoint's folder in the output. */
    public static final String CHECKPOINT = "checkpoint";
    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
    private static final int REPORT_PIECE = 1 << 14;

    /** The outcome: the report, and the quantized checkpoint written (null when the gate failed). */
    /** The gate's outcome and the quantized checkpoint (absent when the gate failed). */
    public record Result(QuantizationReport report, Path checkpoint) {
        public boolean passed() {
            return report.gatePassed();
        }

        /** What a user reads when the gate failed: the rise, the limit and the worst layers. */
        public String gateMessage() {
            QuantizationReport.Activations a = report.activations();
            if (a != null && a.deltaPerplexity() > report.deltaPerplexity()) {
                return String.format("%s perplexity rose by %.4f (%.4f -> %.4f; weights only: %.4f), more than the allowed %.4f; "
                                + "worst layers: %s", a.precision(), a.deltaPerplexity(), report.floatPerplexity(), a.perplexity(),
                        report.deltaPerplexity(), report.maxDeltaPerplexity(), report.worstLayers());
            }
            return String.format("perplexity rose by %.4f (%.4f -> %.4f), more than the allowed %.4f; worst layers: %s",
                    report.deltaPerplexity(), report.floatPerplexity(), report.quantizedPerplexity(), report.maxDeltaPerplexity(),
                    report.worstLayers());
        }
    }

    private QuantizePipeline() {
    }

    public static Result run(Checkpoint ckpt, QuantizeOptions opt, Path out, Progress progress) {
        long t0 = System.nanoTime();
        if (!Folders.isMissingOrEmpty(out)) {
            throw new QuantizationException(out + " already exists and is not empty");
        }
        // the inputs are read and checked before anything is written
        GateText text;
        CalibrationSet set = null;
        try (Tokenizer tok = Tokenizer.load(ckpt.dir())) {
            text = opt.evalText() != null ? gateText(opt.evalText(), tok, opt, ckpt) : bundledGateText(tok, opt, ckpt);
            if (opt.calibration() != null && (!opt.method().equals("rtn") || opt.autoKeepPercent() > 0
                    || opt.activations().quantized())) {
                QuantizeOptions.Calibration cal = opt.calibration();
                set = CalibrationSet.load(cal.file(), tok, cal.samples(),
                        Math.min(cal.length(), ckpt.config().maxPositionEmbeddings()), cal.seed());
            }
        }
        Path scratch = out.resolve(".work");
        boolean finished = false;
        try {
            Files.createDirectories(out);
            Result r = run(ckpt, opt, text, set, out, scratch, progress, t0);
            finished = true;
            return r;
        } catch (IOException e) {
            throw new UncheckedIOException("writing " + out + ": " + e.getMessage(), e);
        } finally {
            Folders.deleteQuietly(scratch);
            if (!finished) {
                deleteIfEmpty(out);
            }
        }
    }

    private static GateText gateText(Path file, Tokenizer tok, QuantizeOptions opt, Checkpoint ckpt) {
        return GateText.of(file, tok, opt.evalWindow(), opt.evalTokens(), ckpt.config().maxPositionEmbeddings());
    }

    private static GateText bundledGateText(Tokenizer tok, QuantizeOptions opt, Checkpoint ckpt) {
        Path dir = null;
        try {
            dir = Files.createTempDirectory("hexforge-eval");
            return gateText(BundledData.evalText(dir), tok, opt, ckpt);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } finally {
            Folders.deleteQuietly(dir);
        }
    }

    private static void deleteIfEmpty(Path dir) {
        try {
            Files.deleteIfExists(dir);
        } catch (IOException e) {
            // not empty: what a caller left there stays
        }
    }

    private static Result run(Checkpoint ckpt, QuantizeOptions opt, GateText text, CalibrationSet set, Path out, Path scratch,
                              Progress progress, long t0) throws IOException {
        progress.update("quantize", 0, 3);
        // the float model's scores are looked up (by the model's digest) while the model is quantized
        FloatBaseline baseline = FloatBaseline.start(ckpt, text, opt.cache());

        // each quantized tensor goes to a file as it is finished; the heap holds one layer at a time
        StoredTensors linears = StoredTensors.in(scratch.resolve("linears"));
        QuantizedModel qm;
        CoverageReport coverage = set == null ? null : set.coverage();
        List<String> warnings = new ArrayList<>(set == null ? List.of() : set.warnings());
        Map<String, GptqRunner.LayerError> outputErrors = new HashMap<>();
        List<Awq.GroupError> awqGroups = null;
        SensitivityScan.Result scan = null;
        List<String> keep = opt.keep();
        if (opt.autoKeepPercent() > 0) {
            // the scan runs the whole float model once per linear, so it holds the model
            scan = SensitivityScan.run(DecoderWeights.load(ckpt), set, opt.spec(), opt.autoKeepPercent());
            keep = new ArrayList<>(keep);
            keep.addAll(scan.keep());
        }
        switch (opt.method()) {
            case "gptq" -> {
                GptqRunner.Result r = GptqRunner.run(LayerSource.of(ckpt), set, opt.spec(), opt.gptq(), keep, progress, linears);
                qm = r.model();
                r.errors().forEach(e -> outputErrors.put(e.name(), e));
            }
            case "awq" -> {
                Awq.Result r = Awq.run(LayerSource.of(ckpt), set, opt.spec(), keep, progress, linears);
                qm = r.model();
                awqGroups = r.groups();
            }
            default -> qm = QuantizedModel.rtn(ckpt, opt.spec(), keep, linears);
        }
        if (qm.linears().isEmpty()) {
            throw new QuantizationException("every linear matched a --keep pattern " + keep + "; nothing to quantize");
        }
        qm = qm.withEmbeddings(ckpt, opt.head(), StoredTensors.in(scratch.resolve("embeddings")));
        // every tensor's report on its own (on every core), in the model's order
        List<QuantizationReport.LayerReport> layers = qm.quantized().entrySet().stream().toList().parallelStream()
                .map(e -> layerReport(e.getKey(), ckpt.floats(e.getKey()), e.getValue(), outputErrors.get(e.getKey())))
                .toList();

        ActivationEncodings activations = null;
        double calibrationSeconds = 0;
        if (opt.activations().quantized()) {
            long c0 = System.nanoTime();
            Path graphs = scratch.resolve("calibration");
            try {
                activations = ActivationCalibration.run(ckpt, new QdqFormat(qm), set.sequences(), ActivationCalibration.DEFAULT_CHUNKS,
                        opt.activations(), graphs, progress);
            } finally {
                Folders.deleteQuietly(graphs);
            }
            calibrationSeconds = (System.nanoTime() - c0) / 1e9;
        }

        progress.update("evaluate", 1, 3);
        LinearFormat shipped = MatMulNBitsFormat.runs(qm) ? new MatMulNBitsFormat(qm, MatMulNBitsFormat.INT8_ACTIVATIONS)
                : new QdqFormat(qm);
        // the checkpoint is written into the scratch folder while the gate scores (the write is memory traffic on one
        // core, the scoring arithmetic); it is moved into the output only when the gate passes
        Path pending = scratch.resolve(CHECKPOINT);
        QuantizedModel written = qm;
        Background<Void> writing = Background.run("hexforge-checkpoint-writer",
                () -> QuantizedCheckpoint.write(ckpt, written, opt.method(), pending));
        Perplexity.Scored quant;
        Perplexity.Scored full = null;
        Perplexity.Scored fp;
        try {
            quant = OnnxScoring.score(ckpt, shipped, text, scratch.resolve("quantized"));
            if (activations != null) {
                full = OnnxScoring.scoreStatic(ckpt, new QdqFormat(qm), activations, text, scratch.resolve("full"));
            }
            fp = baseline.scores();
        } finally {
            // a failed gate still waits for the writer, so the scratch folder is deleted with nothing writing into it
            writing.await();
        }
        double fpPpl = fp.result().perplexity();
        double qPpl = quant.result().perplexity();
        double delta = qPpl - fpPpl;
        QuantizationReport.Activations fullReport = null;
        if (full != null) {
            fullReport = new QuantizationReport.Activations(opt.activations().precision(opt.spec().bits()),
                    opt.activations().bits(), opt.activations().kvBits(), activations.rangeMethod(),
                    activations.calibrationSequences(), calibrationSeconds, full.result().perplexity(),
                    full.result().perplexity() - fpPpl, full.agreement(fp), activations.noisiest());
        }
        boolean passed = delta <= opt.maxDeltaPpl() && (fullReport == null || fullReport.deltaPerplexity() <= opt.maxDeltaPpl());
        List<String> worst = layers.stream().sorted(Comparator.comparingDouble(QuantizationReport.LayerReport::relativeError).reversed())
                .limit(5).map(l -> l.name() + String.format(" (rel. error %.4f)", l.relativeError())).toList();
        Path checkpoint = out.resolve(CHECKPOINT);
        if (passed) {
            progress.update("write", 2, 3);
            writing.join();
            if (activations != null) {
                activations.write(pending.resolve(ActivationEncodings.FILE));
            }
            Files.move(pending, checkpoint, StandardCopyOption.ATOMIC_MOVE);
        }
        QuantizationReport report = new QuantizationReport(opt.method(), opt.spec().describe(),
                opt.head() == null ? "float" : opt.head().describe(), keep, coverage,
                warnings, layers, awqGroups, scan, fpPpl, qPpl, delta, opt.maxDeltaPpl(), passed, quant.agreement(fp),
                fp.result().scoredTokens(), worst, fullReport, (System.nanoTime() - t0) / 1e9);
        JSON.writeValue(out.resolve(REPORT).toFile(), report);
        progress.update("done", 3, 3);
        return new Result(report, passed ? checkpoint : null);
    }

    static QuantizationReport.LayerReport layerReport(String name, float[] w, QuantizedLinear q, GptqRunner.LayerError out) {
        // the squared error and the squared norm in double, four running sums each (one sum was a chain of dependent
        // additions); the dequantized values are made a piece at a time, exactly as the checkpoint's
        double e0 = 0, e1 = 0, e2 = 0, e3 = 0, n0 = 0, n1 = 0, n2 = 0, n3 = 0;
        float[] piece = new float[Math.min(w.length, REPORT_PIECE)];
        for (int from = 0; from < w.length; from += piece.length) {
            int n = Math.min(piece.length, w.length - from);
            q.dequantize(from, piece, n);
            int j = 0;
            for (; j + 4 <= n; j += 4) {
                float w0 = w[from + j], w1 = w[from + j + 1], w2 = w[from + j + 2], w3 = w[from + j + 3];
                double d0 = w0 - piece[j], d1 = w1 - piece[j + 1], d2 = w2 - piece[j + 2], d3 = w3 - piece[j + 3];
                e0 += d0 * d0;
                e1 += d1 * d1;
                e2 += d2 * d2;
                e3 += d3 * d3;
                n0 += (double) w0 * w0;
                n1 += (double) w1 * w1;
                n2 += (double) w2 * w2;
                n3 += (double) w3 * w3;
            }
            for (; j < n; j++) {
                float x = w[from + j];
                double d = x - piece[j];
                e0 += d * d;
                n0 += (double) x * x;
            }
        }
        double squaredError = e0 + e1 + e2 + e3;
        double squaredNorm = n0 + n1 + n2 + n3;
        float min = Float.POSITIVE_INFINITY;
        float max = 0;
        double sum = 0;
        for (float s : q.scales()) {
            min = Math.min(min, s);
            max = Math.max(max, s);
            sum += s;
        }
        QuantSpec s = q.spec();
        return new QuantizationReport.LayerReport(name, s.bits(), s.groupSize(), s.symmetric(), min, max,
                sum / q.scales().length, squaredNorm == 0 ? 0 : Math.sqrt(squaredError / squaredNorm),
                out == null ? null : out.gptq(), out == null ? null : out.rtn());
    }
}
