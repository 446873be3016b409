package dev.hexforge.cli;

import dev.hexforge.pass.CompilePass;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;

@Command(name = "compile", mixinStandardHelpOptions = true,
        description = {"Compile a static export (hexforge export --variant static, or quantize's OUT/onnx-model) into an NPU bundle.",
                "ort-qnn needs nothing more; qnn-context-binary, qnn-model-lib and genie (a Genie bundle, from an export with",
                "--variant genie) run the QNN SDK's tools (--qnn-sdk or QNN_SDK_ROOT).",
                "The fleet's compile stage runs the same pass."})
final class CompileCommand implements Callable<Integer> {
    @picocli.CommandLine.Spec
    picocli.CommandLine.Model.CommandSpec spec;
    @Option(names = "--model", required = true, description = "static export folder")
    Path model;
    @Option(names = "--out", required = true, description = "bundle folder (must not exist or be empty)")
    Path out;
    @Option(names = "--target", descriptionKey = "compile.target")
    String target;
    @Option(names = "--soc", descriptionKey = "compile.soc")
    String soc;
    @Option(names = "--htp-arch", descriptionKey = "compile.htpArch")
    int htpArch;
    @Option(names = "--seed", descriptionKey = "compile.sampler.seed")
    long seed;
    @Option(names = "--temperature", descriptionKey = "compile.sampler.temperature")
    double temperature;
    @Option(names = "--top-k", descriptionKey = "compile.sampler.topK")
    int topK;
    @Option(names = "--top-p", descriptionKey = "compile.sampler.topP")
    double topP;
    @Option(names = "--qnn-sdk", description = "QNN SDK root (default: $QNN_SDK_ROOT)")
    Path qnnSdk;
    @Option(names = "--json", description = "print one JSON object (the bundle's manifest and the output folder)")
    boolean json;

    @Override
    public Integer call() {
        String env = System.getenv("QNN_SDK_ROOT");
        Path sdk = qnnSdk != null ? qnnSdk : env == null || env.isBlank() ? null : Path.of(env);
        // the flags as a job spec's compile settings, mapped by the pass as a fleet job's are
        CompilePass.Result r = CompilePass.run(model, CompilePass.options(SpecOptions.spec(spec, List.of(), Map.of()).compile(), sdk), out);
        if (json) {
            Json j = new Json().put("out", out.toAbsolutePath().toString()).put("kind", r.kind());
            r.report().forEach(j::put);
            j.print();
        } else {
            System.out.printf("compiled %s for %s (%s) into %s in %.1fs%n", model.getFileName(), r.report().get("target"), r.report().get("soc"), out,
                    ((Number) r.report().get("seconds")).doubleValue());
        }
        return 0;
    }
}
