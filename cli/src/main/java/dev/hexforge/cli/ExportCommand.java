package dev.hexforge.cli;

import dev.hexforge.checkpoint.Checkpoint;
import dev.hexforge.onnx.export.DecoderExporter;
import dev.hexforge.onnx.export.ExportInfo;
import dev.hexforge.onnx.export.ExportOptions;
import dev.hexforge.onnx.export.Variant;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.nio.file.Path;
import java.util.concurrent.Callable;

@Command(name = "export", mixinStandardHelpOptions = true,
        description = "Export a Hugging Face Qwen2/Llama folder to ONNX (dynamic: HF/genai convention; static: NPU graphs).")
final class ExportCommand implements Callable<Integer> {
    @Option(names = "--model", required = true, description = "Hugging Face model folder")
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
    @Option(names = "--json", description = "print one JSON object with the result")
    boolean json;

    @Override
    public Integer call() {
        Variant v = switch (variant.toLowerCase()) {
            case "dynamic" -> Variant.DYNAMIC;
            case "static" -> Variant.STATIC;
            default -> throw new IllegalArgumentException("--variant must be dynamic or static, got '" + variant + "'");
        };
        ExportOptions opt = new ExportOptions(v, seq, ctx, opset);
        long t0 = System.nanoTime();
        ExportInfo info;
        try (Checkpoint ckpt = Checkpoint.open(model); ProgressBar bar = new ProgressBar("export")) {
            ckpt.warnings().forEach(w -> System.err.println("warning: " + w));
            info = DecoderExporter.export(ckpt, out, opt, bar);
        }
        double secs = (System.nanoTime() - t0) / 1e9;
        if (json) {
            new Json().put("out", out.toAbsolutePath().toString()).put("variant", v.name().toLowerCase())
                    .put("graphs", info.graphs()).put("seconds", secs).print();
        } else {
            System.out.printf("exported %s (%s) to %s in %.1fs: %s%n", model.getFileName(), v.name().toLowerCase(), out,
                    secs, info.graphs().values());
        }
        return 0;
    }
}
