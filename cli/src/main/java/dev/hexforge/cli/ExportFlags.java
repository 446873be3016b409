package dev.hexforge.cli;

import dev.hexforge.contracts.JobSpec;
import dev.hexforge.pass.ExportPass;
import picocli.CommandLine.Option;

/**
 * The export pass's options, as {@code export}, {@code quantize} and {@code convert} take them (defaults from the job
 * spec, and from {@code --target} where it is given: the layout and precision the target needs).
 */
final class ExportFlags {
    @Option(names = "--target", descriptionKey = "compile.target")
    String target;
    @Option(names = "--variant", descriptionKey = "export.variant")
    String variant;
    @Option(names = "--seq", descriptionKey = "export.seq")
    int seq;
    @Option(names = "--ctx", descriptionKey = "export.ctx")
    int ctx;
    @Option(names = "--opset", descriptionKey = "export.opset")
    int opset;
    @Option(names = "--max-graph-mb", descriptionKey = "export.maxGraphMb")
    int maxGraphMb;
    @Option(names = "--format", descriptionKey = "quantize.format")
    String format;
    @Option(names = "--accuracy-level", descriptionKey = "quantize.accuracyLevel")
    int accuracyLevel;
    @Option(names = "--reference", description = "write reference.json: the host's answers a device runner checks its run "
            + "against (the Java float forward over the model; a job with a benchmark stage writes it)")
    boolean reference;

    /** The export pass's options for {@code spec} (the command's flags as a job spec), with the CLI's own --reference. */
    ExportPass.Options options(JobSpec spec) {
        return ExportPass.options(spec).orAsked(reference);
    }
}
