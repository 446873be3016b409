package dev.hexforge.quant;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import dev.hexforge.checkpoint.Checkpoint;
import dev.hexforge.eval.Perplexity;
import dev.hexforge.forward.DecoderForward;
import dev.hexforge.forward.DecoderWeights;
import dev.hexforge.generate.Generator;
import dev.hexforge.io.Folders;
import dev.hexforge.progress.Progress;
import dev.hexforge.quant.awq.Awq;
import dev.hexforge.quant.calib.CalibrationSet;
import dev.hexforge.quant.calib.CoverageReport;
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
 * The quantize pass: quantize the checkpoint's linears (RTN, or GPTQ / AWQ on calibration data), measure the accuracy cost (perplexity of the float and
 * fake-quantized Java forward on the evaluation text, greedy agreement on fixed prompts), apply the gate, and only
 * when it passes write the quantized checkpoint ({@code OUT/checkpoint}, see {@link QuantizedCheckpoint}). The report
 * ({@code OUT/quantization_report.json}) is written either way.
 */
public final class QuantizePipeline {
    public static final String REPORT = "quantization_report.json";
    /** The quantized checkpoint's folder in the output. */
    public static final String CHECKPOINT = "checkpoint";
    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
    private static final List<String> AGREEMENT_PROMPTS = List.of(
            "First Citizen:\nBefore we proceed any further, hear me speak.\n\n",
            "ROMEO:\nBut soft, what light through yonder window breaks?\n",
            "子曰：学而时习之，不亦说乎？",
            "<|im_start|>user\nContinue the text.<|im_end|>\n<|im_start|>assistant\n");

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
        progress.update("quantize", 0, 3);
        DecoderWeights base = DecoderWeights.load(ckpt);
        QuantizedModel qm;
        CoverageReport coverage = null;
        List<String> warnings = new ArrayList<>();
        Map<String, GptqRunner.LayerError> outputErrors = new HashMap<>();
        List<Awq.GroupError> awqGroups = null;
        SensitivityScan.Result scan = null;
        List<String> keep = opt.keep();
        CalibrationSet set = null;
        if (opt.calibration() != null && (!opt.method().equals("rtn") || opt.autoKeepPercent() > 0)) {
            QuantizeOptions.Calibration cal = opt.calibration();
            try (Tokenizer tok = Tokenizer.load(ckpt.dir())) {
                set = CalibrationSet.load(cal.file(), tok, cal.samples(),
                        Math.min(cal.length(), ckpt.config().maxPositionEmbeddings()), cal.seed());
            }
            coverage = set.coverage();
            warnings.addAll(set.warnings());
        }
        if (opt.autoKeepPercent() > 0) {
            scan = SensitivityScan.run(base, set, opt.spec(), opt.autoKeepPercent());
            keep = new ArrayList<>(keep);
            keep.addAll(scan.keep());
        }
        if (!opt.method().equals("rtn")) {
            if (opt.method().equals("gptq")) {
                GptqRunner.Result r = GptqRunner.run(base, set, opt.spec(), opt.gptq(), keep, progress);
                qm = r.model();
                r.errors().forEach(e -> outputErrors.put(e.name(), e));
            } else {
                Awq.Result r = Awq.run(base, set, opt.spec(), keep, progress);
                qm = r.model();
                awqGroups = r.groups();
            }
        } else {
            qm = QuantizedModel.rtn(ckpt, opt.spec(), keep);
        }
        if (qm.linears().isEmpty()) {
            throw new QuantizationException("every linear matched a --keep pattern " + keep + "; nothing to quantize");
        }
        List<QuantizationReport.LayerReport> layers = new ArrayList<>();
        for (Map.Entry<String, QuantizedLinear> e : qm.linears().entrySet()) {
            layers.add(layerReport(e.getKey(), ckpt.floats(e.getKey()), e.getValue(), outputErrors.get(e.getKey())));
        }
        progress.update("evaluate", 1, 3);
        DecoderForward fp = new DecoderForward(base);
        DecoderForward quant = new DecoderForward(qm.fakeQuantized(base));
        Double fpPpl = null;
        Double qPpl = null;
        double agreement;
        try (Tokenizer tok = Tokenizer.load(ckpt.dir())) {
            if (opt.evalText() != null) {
                int[] ids = tok.encode(readText(opt.evalText()));
                int window = Math.min(opt.evalWindow(), ckpt.config().maxPositionEmbeddings());
                fpPpl = Perplexity.evaluate(fp, ids, window, null).perplexity();
                qPpl = Perplexity.evaluate(quant, ids, window, null).perplexity();
            }
            agreement = greedyAgreement(fp, quant, tok);
        }
        Double delta = qPpl == null ? null : qPpl - fpPpl;
        boolean passed = delta == null || delta <= opt.maxDeltaPpl();
        List<String> worst = layers.stream().sorted(Comparator.comparingDouble(QuantizationReport.LayerReport::relativeError).reversed())
                .limit(5).map(l -> l.name() + String.format(" (rel. error %.4f)", l.relativeError())).toList();
        Path checkpoint = out.resolve(CHECKPOINT);
        try {
            Files.createDirectories(out);
            if (passed) {
                progress.update("write", 2, 3);
                QuantizedCheckpoint.write(ckpt, qm, opt.method(), checkpoint);
            }
            QuantizationReport report = new QuantizationReport(opt.method(), opt.spec().describe(), keep, coverage,
                    warnings, layers, awqGroups, scan, fpPpl, qPpl, delta, opt.maxDeltaPpl(), passed, agreement, worst, (System.nanoTime() - t0) / 1e9);
            JSON.writeValue(out.resolve(REPORT).toFile(), report);
            progress.update("done", 3, 3);
            return new Result(report, passed ? checkpoint : null);
        } catch (IOException e) {
            throw new UncheckedIOException("writing " + out + ": " + e.getMessage(), e);
        }
    }

    private static String readText(Path p) {
        try {
            String s = Files.readString(p);
            if (s.isBlank()) {
                throw new QuantizationException(p + ": the evaluation text is empty");
            }
            return s;
        } catch (java.nio.charset.MalformedInputException e) {
            throw new QuantizationException(p + " is not valid UTF-8 text");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static double greedyAgreement(DecoderForward fp, DecoderForward quant, Tokenizer tok) {
        int same = 0;
        int total = 0;
        for (String prompt : AGREEMENT_PROMPTS) {
            int[] ids = tok.encode(prompt);
            int[] a = Generator.generate(fp, ids, Generator.Options.greedy(16), null);
            int[] b = Generator.generate(quant, ids, Generator.Options.greedy(16), null);
            for (int i = 0; i < a.length; i++) {
                if (a[i] != b[i]) {
                    break;
                }
                same++;
            }
            total += a.length;
        }
        return (double) same / total;
    }

    static QuantizationReport.LayerReport layerReport(String name, float[] w, QuantizedLinear q, GptqRunner.LayerError out) {
        float[] d = q.dequantize();
        double err = 0;
        double norm = 0;
        for (int i = 0; i < w.length; i++) {
            double diff = w[i] - d[i];
            err += diff * diff;
            norm += (double) w[i] * w[i];
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
