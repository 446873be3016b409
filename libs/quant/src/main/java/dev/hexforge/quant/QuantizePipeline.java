package dev.hexforge.quant;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import dev.hexforge.checkpoint.Checkpoint;
import dev.hexforge.checkpoint.ModelDigest;
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
import dev.hexforge.quant.resume.LayerJournal;
import dev.hexforge.quant.resume.QuantizeKey;
import dev.hexforge.resume.RunKey;
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
import java.util.Set;
import java.util.stream.Stream;

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

    /**
     * Quantizes into {@code out}. A run killed at any moment, run again with the same model, inputs, settings and
     * {@code out}, continues after the last finished layer of the weights (the later phases start again) and writes
     * the same checkpoint; a finished run's folder is its result. Any difference is refused, named.
     */
    public static Result run(Checkpoint ckpt, QuantizeOptions opt, Path out, Progress progress) {
        long t0 = System.nanoTime();
        Path scratch = out.resolve(WORK);
        Path runningKey = scratch.resolve(KEY);
        Path finishedKey = out.resolve(FINISHED_KEY);
        boolean interrupted = Files.isRegularFile(runningKey);
        if (!interrupted && Files.isDirectory(scratch)) {
            Folders.deleteQuietly(scratch); // a run killed before it wrote its key: nothing of it can be continued
        }
        boolean done = !interrupted && Files.isRegularFile(finishedKey) && Files.isRegularFile(out.resolve(REPORT));
        if (!interrupted && !done && !Folders.isMissingOrEmpty(out)) {
            throw new QuantizationException(out + " already exists and is not empty");
        }
        // the inputs are read and checked before anything is written
        GateText text;
        CalibrationSet set = null;
        Tokenizer.check(ckpt.dir(), ckpt.config().vocabSize()); // the quantized checkpoint ships it
        try (Tokenizer tok = Tokenizer.load(ckpt.dir())) {
            text = opt.evalText() != null ? gateText(opt.evalText(), tok, opt, ckpt) : bundledGateText(tok, opt, ckpt);
            if (opt.calibration() != null && (!opt.method().equals("rtn") || opt.autoKeepPercent() > 0
                    || opt.activations().quantized())) {
                QuantizeOptions.Calibration cal = opt.calibration();
                set = CalibrationSet.load(cal.file(), tok, cal.samples(),
                        Math.min(cal.length(), ckpt.config().maxPositionEmbeddings()), cal.seed());
            }
        }
        String modelDigest = ModelDigest.of(ckpt.dir());
        RunKey key = QuantizeKey.of(modelDigest, opt, text, set);
        if (interrupted || done) {
            List<String> differences = RunKey.read(interrupted ? runningKey : finishedKey, QuantizationException::new).differences(key);
            if (!differences.isEmpty()) {
                throw new QuantizationException(out + " holds " + (interrupted ? "an interrupted" : "a finished")
                        + " quantize of other inputs or settings (" + String.join("; ", differences) + "): give the same ones to "
                        + (interrupted ? "continue it" : "use it") + ", or another output folder (or delete this one) to start over");
            }
            if (done) {
                return finished(out);
            }
        }
        boolean finished = false;
        try {
            Files.createDirectories(scratch);
            if (interrupted) {
                // what the interrupted run had moved into place, and its phases after the weights, are made again
                Folders.deleteQuietly(out.resolve(CHECKPOINT));
                Files.deleteIfExists(out.resolve(REPORT));
                try (Stream<Path> left = Files.list(scratch)) {
                    for (Path p : left.toList()) {
                        if (!RESUMED.contains(p.getFileName().toString())) {
                            Folders.deleteQuietly(p);
                        }
                    }
                }
            } else {
                key.write(runningKey);
            }
            Result r = run(ckpt, opt, text, set, modelDigest, out, scratch, progress, t0);
            key.write(finishedKey);
            finished = true;
            return r;
        } catch (IOException e) {
            throw new UncheckedIOException("writing " + out + ": " + e.getMessage(), e);
        } finally {
            if (finished) {
                Folders.deleteQuietly(scratch);
            }
            // otherwise the scratch folder stays: the same command continues from it
        }
    }

    /** The folder's work in progress: quantized tensors, layer states and the run's key; gone when the run finishes. */
    public static final String WORK = ".work";
    private static final String KEY = "run.json";
    private static final String LAYERS = "layers.state";
    private static final String LINEARS = "linears";
    private static final String EMBEDDINGS = "embeddings";
    /** What an interrupted run left that the next one continues from. */
    private static final Set<String> RESUMED = Set.of(KEY, LAYERS, LINEARS, EMBEDDINGS);
    /** A finished run's key, kept beside its outputs so that the same command finds its result there. */
    public static final String FINISHED_KEY = ".quantize-run.json";

    private static Result finished(Path out) {
        try {
            QuantizationReport report = JSON.readValue(out.resolve(REPORT).toFile(), QuantizationReport.class);
            Path checkpoint = out.resolve(CHECKPOINT);
            return new Result(report, report.gatePassed() && Files.isDirectory(checkpoint) ? checkpoint : null);
        } catch (IOException e) {
            throw new QuantizationException(out.resolve(REPORT) + " (a finished run's report) cannot be read: " + e.getMessage()
                    + "; delete the output folder to start over");
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

    private static Result run(Checkpoint ckpt, QuantizeOptions opt, GateText text, CalibrationSet set, String modelDigest,
                              Path out, Path scratch, Progress progress, long t0) throws IOException {
        progress.update("quantize", 0, 3);
        // the float model's scores are looked up (by the model's digest) while the model is quantized
        FloatBaseline baseline = FloatBaseline.start(ckpt, text, opt.cache(), modelDigest);

        // each quantized tensor goes to a file as it is finished; the heap holds one layer at a time. A calibrated
        // method saves what it carries to the next layer after each one; an interrupted run's tensors past its last
        // saved layer are dropped and made again
        LayerJournal journal = LayerJournal.in(scratch.resolve(LAYERS));
        LayerJournal.State saved = opt.method().equals("rtn") ? null : journal.resume();
        StoredTensors linears = StoredTensors.reopen(scratch.resolve(LINEARS), opt.spec(),
                opt.method().equals("rtn") ? -1 : saved == null ? 0 : saved.storedTensors());
        QuantizedModel qm;
        CoverageReport coverage = set == null ? null : set.coverage();
        List<String> warnings = new ArrayList<>(ckpt.warnings()); // what the checkpoint said of itself (NaN weights allowed, ...)
        warnings.addAll(set == null ? List.of() : set.warnings());
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
                GptqRunner.Result r = GptqRunner.run(LayerSource.of(ckpt), set, opt.spec(), opt.gptq(), keep, progress, linears,
                        journal);
                qm = r.model();
                r.errors().forEach(e -> outputErrors.put(e.name(), e));
            }
            case "awq" -> {
                Awq.Result r = Awq.run(LayerSource.of(ckpt), set, opt.spec(), keep, progress, linears, journal);
                qm = r.model();
                awqGroups = r.groups();
            }
            default -> qm = QuantizedModel.rtn(ckpt, opt.spec(), keep, linears);
        }
        if (qm.linears().isEmpty()) {
            throw new QuantizationException("every linear matched a --keep pattern " + keep + "; nothing to quantize");
        }
        qm = qm.withEmbeddings(ckpt, opt.head(), opt.head() == null ? Map.of()
                : StoredTensors.reopen(scratch.resolve(EMBEDDINGS), opt.head(), -1));
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
                        opt.activations(), opt.lora(), graphs, progress);
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
