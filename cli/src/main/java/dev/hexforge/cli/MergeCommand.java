package dev.hexforge.cli;

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

    @Override
    public Integer call() {
        MergePass.Result r = MergePass.run(model, adapter, out);
        if (json) {
            new Json().put("out", out.toAbsolutePath().toString()).put("merged_linears", r.report().get("mergedLinears"))
                    .put("scale", r.report().get("scale")).print();
        } else {
            System.out.printf("merged %s adapted linears (r=%s, scale %.3f) into %s%n", r.report().get("mergedLinears"),
                    r.report().get("rank"), ((Number) r.report().get("scale")).doubleValue(), out);
        }
        return 0;
    }
}
