package dev.hexforge.pass;

import com.fasterxml.jackson.annotation.JsonInclude;
import dev.hexforge.checkpoint.Checkpoint;
import dev.hexforge.checkpoint.ModelDigest;
import dev.hexforge.checkpoint.NonFinite;
import dev.hexforge.contracts.HexforgeException;
import dev.hexforge.contracts.JobSpec;
import dev.hexforge.contracts.Stage;
import dev.hexforge.eval.DeviceReference;
import dev.hexforge.forward.DecoderForward;
import dev.hexforge.forward.DecoderWeights;
import dev.hexforge.memory.MemoryPlan;
import dev.hexforge.onnx.export.DecoderExporter;
import dev.hexforge.onnx.export.ExportInfo;
import dev.hexforge.onnx.export.ExportOptions;
import dev.hexforge.onnx.export.GenieIo;
import dev.hexforge.onnx.export.LinearFormat;
import dev.hexforge.onnx.export.Variant;
import dev.hexforge.onnx.lora.LoraInputs;
import dev.hexforge.onnx.runtime.OnnxLm;
import dev.hexforge.generate.CausalLm;
import dev.hexforge.onnx.qdq.ActivationEncodings;
import dev.hexforge.progress.Progress;
import dev.hexforge.quant.AimetEncodings;
import dev.hexforge.quant.QuantizedCheckpoint;
import dev.hexforge.quant.QuantizedModel;
import dev.hexforge.quant.onnx.MatMulNBitsFormat;
import dev.hexforge.quant.onnx.QdqFormat;
import dev.hexforge.tokenizer.Tokenizer;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The export stage: a Hugging Face folder, or a quantized checkpoint of {@link QuantizePass}, as ONNX graphs. A
 * quantized model's linears are written as QDQ (the NPU's form), MatMulNBits (the CPU's) or both; an export carries
 * the host's reference answers for on-device accuracy ({@link DeviceReference}) when a benchmark will use them, and a
 * QDQ export the QNN converter's quantization overrides ({@link AimetEncodings}) when a QNN SDK target will read it.
 * A quantized checkpoint with calibrated activation encodings ({@link ActivationEncodings}) exports its static QDQ
 * graphs fully quantized; their reference is then the graphs themselves run by ONNX Runtime on this CPU.
 */
public final class ExportPass {
    /** How a quantized model's linears are written; a float model ignores it. */
    public enum Format {
        QDQ, MATMULNBITS, BOTH;

        public static Format parse(String s) {
            try {
                return valueOf(s.trim().toUpperCase(Locale.ROOT));
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("format must be qdq, matmulnbits or both, got '" + s + "'");
            }
        }

        String id() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    /**
     * @param accuracyLevel MatMulNBits compute (see {@link MatMulNBitsFormat}): 4 int8 activations, 0 float32
     * @param reference     write {@code reference.json}, the host's answers a device runner checks its run against (the
     *                      Java float forward over the model: seconds to minutes at real sizes, so only when asked)
     */
    public record Options(ExportOptions export, Format format, int accuracyLevel, boolean reference,
                          Map<String, Path> adapters) {
        public Options {
            adapters = adapters == null ? Map.of() : Collections.unmodifiableMap(new LinkedHashMap<>(adapters));
        }

        public Options(ExportOptions export, Format format, int accuracyLevel, boolean reference) {
            this(export, format, accuracyLevel, reference, Map.of());
        }

        /** These options, also writing the device reference where asked (the CLI's flag). */
        public Options orAsked(boolean withReference) {
            return new Options(export, format, accuracyLevel, reference || withReference, adapters);
        }

        /**
         * These options with LoRA adapters by name (PEFT folders): the graphs take their inputs and each is written
         * as {@code adapters/NAME.onnx_adapter}, the base weights unchanged ({@link AdapterExport}).
         */
        public Options withAdapters(Map<String, Path> named) {
            return new Options(export, format, accuracyLevel, reference, named);
        }
    }

    /** One export folder and the kind it is stored as ({@code onnx-static-qdq}, ...). */
    public record Output(Path dir, String kind) {
    }

    public record Result(List<Output> outputs, Report report) {
    }

    /**
     * What the export stage reports.
     *
     * @param graphs    the first output's graphs by role
     * @param precision what the graphs compute in (w8a16, w4, ...); null for a float model's export
     * @param formats   the kind of each output folder
     * @param adapters  each LoRA adapter's file in the first output folder; null when the graphs take none
     */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record Report(Map<String, String> graphs, String precision, String variant, List<String> formats,
                         Map<String, String> adapters, List<String> warnings, double seconds) {
    }

    private ExportPass() {
    }

    /**
     * A job spec's export settings: the graphs of {@code export}, the linear format and MatMulNBits compute of
     * {@code quantize}, the device reference when a benchmark stage will check a device's run against it.
     */
    public static Options options(JobSpec spec) {
        JobSpec.Export e = spec.export();
        return new Options(new ExportOptions(Variant.parse(e.variant()), e.seq(), e.ctx(), e.opset(), e.maxGraphBytes()),
                Format.parse(spec.quantize().format()), spec.quantize().accuracyLevel(),
                spec.stageList().contains(Stage.BENCHMARK));
    }

    public static Result run(Path model, NonFinite nonFinite, Options o, Path out, Progress progress) {
        long t0 = System.nanoTime();
        String variant = o.export().variant().id();
        List<Written> outputs = new ArrayList<>();
        List<String> warnings = new ArrayList<>();
        try (Checkpoint ckpt = Checkpoint.open(model, nonFinite)) {
            MemoryPlan.require(MemoryPlan.streaming(Stage.EXPORT, ckpt.config()));
            warnings.addAll(ckpt.warnings());
            Tokenizer.check(model, ckpt.config().vocabSize()); // every export ships it
            AdapterExport adapters = AdapterExport.read(o.adapters(), ckpt.config());
            ExportRun run = ExportRun.open(out, outputDirs(model, o, out), settings(model, o), () -> ModelDigest.of(model));
            try {
                export(ckpt, model, o, out, run, adapters, outputs, warnings, progress);
            } catch (HexforgeException e) {
                run.abandon();
                throw e;
            } finally {
                run.awaitDigest(); // however the export ends, its key is whole before the caller goes on
            }
            run.finish();
        }
        Map<String, String> graphs = outputs.isEmpty() ? null : outputs.get(0).info().graphs();
        // a float model's export has no precision of its own to report
        String precision = outputs.isEmpty() || !QuantizedCheckpoint.isQuantized(model) ? null : outputs.get(0).info().precision();
        Map<String, String> adapters = outputs.isEmpty() || outputs.get(0).info().lora() == null ? null
                : outputs.get(0).info().lora().adapters();
        return new Result(outputs.stream().map(Written::output).toList(), new Report(graphs, precision, variant,
                outputs.stream().map(x -> x.output().kind()).toList(), adapters, warnings, (System.nanoTime() - t0) / 1e9));
    }

    /** An output folder and what its export wrote. */
    private record Written(Output output, ExportInfo info) {
        Path dir() {
            return output.dir();
        }
    }

    /** The formats a quantized model is written in, in order (QDQ first). */
    private static List<Format> formats(Options o) {
        return o.format() == Format.BOTH ? List.of(Format.QDQ, Format.MATMULNBITS) : List.of(o.format());
    }

    /** The folder of a quantized model's export in {@code f}: {@code out}, or one in it per format when both are written. */
    private static Path dir(Path out, Options o, Format f) {
        return formats(o).size() == 1 ? out : out.resolve(f.id());
    }

    /** The folders the export writes. */
    private static List<Path> outputDirs(Path model, Options o, Path out) {
        return QuantizedCheckpoint.isQuantized(model) ? formats(o).stream().map(f -> dir(out, o, f)).toList() : List.of(out);
    }

    /** Raised when the rules that make an export's bytes change, so an older run's weight files are not continued. */
    private static final String RULES = "2";

    /**
     * What decides the export's bytes but the model's weights (whose digest {@link ExportRun} adds): the folder's
     * config, tokenizer and activation encodings, and every option.
     */
    static Map<String, String> settings(Path model, Options o) {
        Map<String, String> f = new LinkedHashMap<>();
        f.put("rules", RULES);
        List<String> side = new ArrayList<>(Checkpoint.SIDE_FILES);
        side.add(ActivationEncodings.FILE);
        f.put("side files", ModelDigest.ofFiles(model, side));
        f.put("export", o.export().toString());
        f.put("format", o.format().id());
        f.put("accuracy level", Integer.toString(o.accuracyLevel()));
        f.put("reference", Boolean.toString(o.reference()));
        f.putAll(AdapterExport.settings(o.adapters()));
        return f;
    }

    private static void export(Checkpoint ckpt, Path model, Options o, Path out, ExportRun run, AdapterExport adapters,
                               List<Written> outputs, List<String> warnings, Progress progress) {
        LoraInputs lora = adapters == null ? null : adapters.inputs();
        String variant = o.export().variant().id();
        QuantizedModel qm = null;
        ActivationEncodings act = null;
        if (!QuantizedCheckpoint.isQuantized(model)) {
            ExportInfo info = DecoderExporter.exportInto(ckpt, out, o.export(), LinearFormat.FLOAT, null, lora,
                    run.journal("model"), progress);
            outputs.add(new Written(new Output(out, "onnx-" + variant), info));
        } else {
            qm = QuantizedCheckpoint.read(ckpt);
            // the quantize pass's calibrated activation ranges: a static QDQ export is then fully quantized
            act = o.export().variant().fixedShapes()
                    ? ActivationEncodings.read(model.resolve(ActivationEncodings.FILE)) : null;
            List<Format> formats = formats(o);
            for (int i = 0; i < formats.size(); i++) {
                Format f = formats.get(i);
                Path dir = dir(out, o, f);
                LinearFormat lf = f == Format.QDQ ? new QdqFormat(qm) : new MatMulNBitsFormat(qm, o.accuracyLevel());
                int part = i;
                ExportInfo info = DecoderExporter.exportInto(ckpt, dir, o.export(), lf, f == Format.QDQ ? act : null, lora,
                        run.journal(f.id()),
                        (what, done, total) -> progress.update(what, part * total + done, formats.size() * total));
                if (f == Format.QDQ && act != null && AimetEncodings.supports(qm)) {
                    // a fully quantized graph the QNN converter can take: it is told every tensor's encoding (AIMET
                    // encodings 0.5.0 have no blocks, so a grouped model's graphs go to ort-qnn only)
                    ActivationEncodings converted = o.export().variant() == Variant.GENIE
                            ? GenieIo.encodings(act, ckpt.config().numLayers()) : act;
                    AimetEncodings.write(qm, List.of(), converted, dir.resolve(AimetEncodings.FILE));
                }
                outputs.add(new Written(new Output(dir, "onnx-" + variant + "-" + f.id()), info));
            }
        }
        if (adapters != null) {
            outputs.forEach(x -> adapters.writeInto(x.dir(), ckpt.config()));
        }
        // a fully quantized graph's reference is the graph itself on this CPU (ONNX Runtime runs its Q / DQ as fake
        // quantization): a device is held to what the graph computes, not to the weight-only forward
        Path fullyQuantized = act == null ? null : outputs.get(0).dir(); // QDQ comes first
        if (o.reference() && fullyQuantized != null) {
            try (Tokenizer tok = Tokenizer.load(model); CausalLm graph = OnnxLm.open(fullyQuantized,
                    Runtime.getRuntime().availableProcessors())) {
                DeviceReference.compute(graph, tok).write(fullyQuantized);
            }
        }
        List<Output> others = outputs.stream().map(Written::output).filter(x -> !x.dir().equals(fullyQuantized)).toList();
        // after the graphs, so the float weights are never held while the export streams
        DecoderWeights weights = o.reference() && !others.isEmpty() ? referenceWeights(ckpt, warnings) : null;
        if (weights != null) {
            weights = qm == null ? weights : qm.fakeQuantized(weights);
            try (Tokenizer tok = Tokenizer.load(model)) {
                DeviceReference ref = DeviceReference.compute(new DecoderForward(weights), tok);
                others.forEach(x -> ref.write(x.dir()));
            }
        }
    }

    /**
     * The float weights the reference forward runs on, or null (with a warning) when they would not fit this
     * process's heap beside what it holds: the export itself streams, and must not fail for its reference.
     */
    private static DecoderWeights referenceWeights(Checkpoint ckpt, List<String> warnings) {
        long floats = 0;
        for (long[] shape : ckpt.tensors().values()) {
            long n = 1;
            for (long d : shape) {
                n *= d;
            }
            floats += n;
        }
        // the fake-quantized copy or the forward's working set, and the weights unless mapped from a bf16 file
        long need = floats * Float.BYTES * (ckpt.mapsBf16() ? 1 : 2);
        Runtime rt = Runtime.getRuntime();
        long free = rt.maxMemory() - (rt.totalMemory() - rt.freeMemory());
        if (need > free) {
            warnings.add(String.format("no %s for on-device accuracy: the reference forward needs %.1f GB of float weights, "
                    + "this process can have %.1f GB more", DeviceReference.FILE, need / 1e9, free / 1e9));
            return null;
        }
        return DecoderWeights.load(ckpt);
    }
}
