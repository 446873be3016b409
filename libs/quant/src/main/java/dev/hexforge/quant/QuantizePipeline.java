package dev.hexforge.quant;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import dev.hexforge.checkpoint.Checkpoint;
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
import dev.hexforge.quant.calib.CalibrationSet;
import dev.hexforge.quant.calib.CoverageReport;
import dev.hexforge.quant.calib.LayerSource;
import dev.hexforge.quant.gptq.GptqRunner;
import dev.hexforge.tokenizer.Tokenizer;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The quantize pass: quantize the checkpoint's linears (RTN, or GPTQ / AWQ on calibration data) and, by RTN, its
 * token embedding and LM head; measure the accuracy cost on the model as it ships, apply the gate, and only when it
 * passes write the quantized checkpoint ({@code OUT/checkpoint}, see {@link QuantizedCheckpoint}). The report
 * ({@code OUT/quantization_report.json}) is written either way.
 *
 * <p>The gate scores the evaluation text's first windows (at most {@code evalTokens} tokens) with ONNX Runtime on
 * this CPU: the quantized model as a MatMulNBits export at accuracy level 4 (int8 activations, the CPU fast path;
 * QDQ where MatMulNBits cannot hold the spec), the float model as a float export whose scores are cached by the
 * model's digest. Perplexity rise and teacher-forced top-1 agreement come from the same windows.
 */
public final class QuantizePipeline {
    public static final String REPORT = "quantization_report.json";
    /** The quantized checkpoint's folder in the output. */
    public static final String CHECKPOINT = "checkpoint";
    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

    /** The outcome: the report, and the quantized checkpoint written (null when the gate failed). */
    public record Result(QuantizationReport report, Path checkpoint) {
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
            if (opt.calibration() != null && (!opt.method().equals("rtn") || opt.autoKeepPercent() > 0)) {
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
        progress.update("float baseline", 0, 4);
        Perplexity.Scored fp = FloatBaseline.of(ckpt, text, opt.cache());

        progress.update("quantize", 1, 4);
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

        progress.update("evaluate", 2, 4);
        LinearFormat shipped = MatMulNBitsFormat.runs(qm) ? new MatMulNBitsFormat(qm, MatMulNBitsFormat.INT8_ACTIVATIONS)
                : new QdqFormat(qm);
        Perplexity.Scored quant = OnnxScoring.score(ckpt, shipped, text, scratch.resolve("quantized"));
        double fpPpl = fp.result().perplexity();
        double qPpl = quant.result().perplexity();
        double delta = qPpl - fpPpl;
        boolean passed = delta <= opt.maxDeltaPpl();
        List<String> worst = layers.stream().sorted(Comparator.comparingDouble(QuantizationReport.LayerReport::relativeError).reversed())
                .limit(5).map(l -> l.name() + String.format(" (rel. error %.4f)", l.relativeError())).toList();
        Path checkpoint = out.resolve(CHECKPOINT);
        if (passed) {
            progress.update("write", 3, 4);
            QuantizedCheckpoint.write(ckpt, qm, opt.method(), checkpoint);
        }
        QuantizationReport report = new QuantizationReport(opt.method(), opt.spec().describe(),
                opt.head() == null ? "float" : opt.head().describe(), keep, coverage,
                warnings, layers, awqGroups, scan, fpPpl, qPpl, delta, opt.maxDeltaPpl(), passed, quant.agreement(fp),
                fp.result().scoredTokens(), worst, (System.nanoTime() - t0) / 1e9);
        JSON.writeValue(out.resolve(REPORT).toFile(), report);
        progress.update("done", 4, 4);
        return new Result(report, passed ? checkpoint : null);
    }

    static QuantizationReport.LayerReport layerReport(String name, float[] w, QuantizedLinear q, GptqRunner.LayerError out) {
        double err = 0;
        double norm = 0;
        int g = q.spec().effectiveGroup(q.in());
        for (int o = 0; o < q.out(); o++) {
            for (int i = 0; i < q.in(); i++) {
                int grp = i / g;
                float wi = w[o * q.in() + i];
                double diff = wi - (q.value(o, i) - q.zero(o, grp)) * q.scale(o, grp);
                err += diff * diff;
                norm += (double) wi * wi;
            }
        }
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
                sum / q.scales().length, norm == 0 ? 0 : Math.sqrt(err / norm),
                out == null ? null : out.gptq(), out == null ? null : out.rtn());
    }
}
