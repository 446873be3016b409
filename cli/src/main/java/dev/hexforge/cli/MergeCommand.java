package dev.hexforge.cli;

import dev.hexforge.checkpoint.NonFinite;
import dev.hexforge.pass.MergePass;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.nio.file.Path;
import java.util.concurrent.Callable;

@Command(name = "merge", mixinStandardHelpOptions = true,
        description = "Merge a PEFT LoRA adapter into its base model (merge_and_unload) and write a full Hugging Face folder.")
final class MergeCommand implements Callable<Integer> {
    @Option(names = "--model", required = true, description = "base Hugging Face folder")
    Path model;
    @Option(names = "--adapter", required = true, description = "PEFT adapter folder (adapter_config.json, adapter_model.safetensors)")
    Path adapter;
    @Option(names = "--out", required = true, description = "output folder (must not exist)")
    Path out;
    @Option(names = "--json", description = "print one JSON object")
    boolean json;
    @Option(names = "--allow-non-finite", description = "go on with NaN or Inf weights in the base model, saying so (refused by default)")
    boolean allowNonFinite;

    @Override
    public Integer call() {
        MergePass.Result r = MergePass.run(model, NonFinite.allowedIf(allowNonFinite), adapter, out);
        MergePass.Report rep = r.report();
        if (json) {
            new Json().put("out", out.toAbsolutePath().toString()).put("merged_linears", rep.mergedLinears())
                    .put("scale", rep.scale()).print();
        } else {
            System.out.printf("merged %d adapted linears (r=%d, scale %.3f) into %s%n", rep.mergedLinears(), rep.rank(),
                    rep.scale(), out);
        }
        return 0;
    }
}
