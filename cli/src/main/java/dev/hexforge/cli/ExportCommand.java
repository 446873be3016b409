package dev.hexforge.cli;

import dev.hexforge.checkpoint.NonFinite;
import dev.hexforge.contracts.JobSpec;
import dev.hexforge.pass.ExportPass;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;

@Command(name = "export", mixinStandardHelpOptions = true,
        description = {"Export a Hugging Face Qwen2/Llama folder, or a quantized checkpoint (quantize's OUT/checkpoint), to ONNX",
                "(dynamic: HF/genai convention; static: NPU graphs). The fleet's export stage runs the same pass."})
final class ExportCommand implements Callable<Integer> {
    @picocli.CommandLine.Spec
    picocli.CommandLine.Model.CommandSpec spec;
    @picocli.CommandLine.Mixin
    ExportFlags exportFlags;
    @Option(names = "--model", required = true, description = "Hugging Face model folder or quantized checkpoint")
    Path model;
    @Option(names = "--out", required = true, description = "output folder (must not exist or be empty)")
    Path out;
    @Option(names = "--json", description = "print one JSON object with the result")
    boolean json;
    @Option(names = "--allow-non-finite", descriptionKey = "allowNonFinite")
    boolean allowNonFinite;
    @Option(names = "--adapter", paramLabel = "NAME=PEFT_DIR",
            description = "a PEFT LoRA adapter to export beside the base model instead of merged into it (repeatable): the "
                    + "graphs take its inputs and OUT/adapters/NAME.onnx_adapter holds them, for ONNX Runtime's run-time adapters")
    Map<String, Path> adapters = new LinkedHashMap<>();

    @Override
    public Integer call() {
        JobSpec job = SpecOptions.spec(spec, List.of("export"), Map.of());
        ExportPass.Options opt = exportFlags.options(job).withAdapters(adapters);
        ExportPass.Result r;
        try (ProgressBar bar = new ProgressBar("export")) {
            r = ExportPass.run(model, NonFinite.allowedIf(job.allowNonFinite()), opt, out, bar);
            bar.finish();
        }
        ExportPass.Report rep = r.report();
        rep.warnings().forEach(w -> System.err.println("warning: " + w));
        if (json) {
            new Json().put("out", out.toAbsolutePath().toString()).put("variant", rep.variant())
                    .put("formats", rep.formats()).put("graphs", rep.graphs()).put("adapters", rep.adapters())
                    .put("seconds", rep.seconds()).print();
        } else {
            System.out.printf("exported %s (%s) to %s in %.1fs: %s%n", model.getFileName(), rep.variant(),
                    r.outputs().size() == 1 ? out : r.outputs().stream().map(ExportPass.Output::dir).toList(), rep.seconds(),
                    rep.graphs().values());
            if (rep.adapters() != null) {
                rep.adapters().forEach((name, file) -> System.out.println("adapter " + name + ": " + file));
            }
        }
        return 0;
    }
}
