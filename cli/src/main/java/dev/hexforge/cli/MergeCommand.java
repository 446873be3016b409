package dev.hexforge.cli;

import dev.hexforge.checkpoint.Checkpoint;
import dev.hexforge.lora.LoraAdapter;
import dev.hexforge.lora.LoraMerge;
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
        try (Checkpoint base = Checkpoint.open(model)) {
            LoraAdapter a = LoraAdapter.read(adapter, base.config());
            LoraMerge.merge(base, a, out);
            if (json) {
                new Json().put("out", out.toAbsolutePath().toString()).put("merged_linears", a.deltas().size())
                        .put("scale", a.config().scale()).print();
            } else {
                System.out.printf("merged %d adapted linears (r=%d, scale %.3f) into %s%n", a.deltas().size(), a.config().r(),
                        a.config().scale(), out);
            }
        }
        return 0;
    }
}
