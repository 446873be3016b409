package dev.hexforge.cli;

import dev.hexforge.onnx.export.ExportOptions;
import dev.hexforge.onnx.export.Variant;
import dev.hexforge.pass.ExportPass;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;

@Command(name = "export", mixinStandardHelpOptions = true,
        description = {"Export a Hugging Face Qwen2/Llama folder, or a quantized checkpoint (quantize's OUT/checkpoint), to ONNX",
                "(dynamic: HF/genai convention; static: NPU graphs). The fleet's export stage runs the same pass."})
final class ExportCommand implements Callable<Integer> {
    @Option(names = "--model", required = true, description = "Hugging Face model folder or quantized checkpoint")
    Path model;
    @Option(names = "--out", required = true, description = "output folder (must not exist or be empty)")
    Path out;
    @Option(names = "--variant", defaultValue = "dynamic", description = "dynamic or static (default: ${DEFAULT-VALUE})")
    String variant;
    @Option(names = "--seq", defaultValue = "128", description = "static prompt-graph length (default: ${DEFAULT-VALUE})")
    int seq;
    @Option(names = "--ctx", defaultValue = "512", description = "static context length, up to 4096 (default: ${DEFAULT-VALUE})")
    int ctx;
    @Option(names = "--opset", defaultValue = "17", description = "ONNX opset, 17-21 (default: ${DEFAULT-VALUE})")
    int opset;
    @Option(names = "--format", defaultValue = "qdq", description = "a quantized checkpoint's linears: qdq, matmulnbits or both "
            + "(OUT/qdq and OUT/matmulnbits) (default: ${DEFAULT-VALUE})")
    String format;
    @Option(names = "--accuracy-level", defaultValue = "4", description = "MatMulNBits compute: 4 int8 activations, 0 float32 "
            + "(default: ${DEFAULT-VALUE})")
    int accuracyLevel;
    @Option(names = "--encodings", description = "write the QNN converter's quantization overrides into a QDQ export")
    boolean encodings;
    @Option(names = "--json", description = "print one JSON object with the result")
    boolean json;

    @Override
    public Integer call() {
        ExportPass.Options opt = new ExportPass.Options(new ExportOptions(Variant.parse(variant), seq, ctx, opset),
                ExportPass.Format.parse(format), accuracyLevel, encodings);
        ExportPass.Result r;
        try (ProgressBar bar = new ProgressBar("export")) {
            r = ExportPass.run(model, opt, out, bar);
            bar.finish();
        }
        ((List<?>) r.report().get("warnings")).forEach(w -> System.err.println("warning: " + w));
        double secs = ((Number) r.report().get("seconds")).doubleValue();
        if (json) {
            new Json().put("out", out.toAbsolutePath().toString()).put("variant", r.report().get("variant"))
                    .put("formats", r.report().get("formats")).put("graphs", r.report().get("graphs")).put("seconds", secs).print();
        } else {
            System.out.printf("exported %s (%s) to %s in %.1fs: %s%n", model.getFileName(), r.report().get("variant"),
                    r.outputs().size() == 1 ? out : r.outputs().stream().map(ExportPass.Output::dir).toList(), secs,
                    ((java.util.Map<?, ?>) r.report().get("graphs")).values());
        }
        return 0;
    }
}
