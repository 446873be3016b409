package dev.hexforge.cli;

import dev.hexforge.contracts.JobSpec;
import dev.hexforge.pass.ExportPass;
import picocli.CommandLine.Option;

/** The export pass's options, as {@code export} and {@code quantize} both take them (defaults from the job spec). */
final class ExportFlags {
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
    @Option(names = "--encodings", description = "write the QNN converter's quantization overrides (encodings.json) into the "
            + "QDQ export; only per-channel specs (--group 0) can be expressed")
    boolean encodings;
    @Option(names = "--reference", description = "write reference.json: the host's answers a device runner checks its run "
            + "against (the Java float forward over the model; a job with a benchmark stage writes it)")
    boolean reference;

    /** The export pass's options for {@code spec} (the command's flags as a job spec), with the CLI's own --encodings and --reference. */
    ExportPass.Options options(JobSpec spec) {
        return ExportPass.options(spec).orAsked(encodings, reference);
    }
}
