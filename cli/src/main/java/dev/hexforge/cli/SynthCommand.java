package dev.hexforge.cli;

import dev.hexforge.checkpoint.Architecture;
import dev.hexforge.safetensors.DType;
import dev.hexforge.synth.Preset;
import dev.hexforge.synth.SyntheticCheckpoint;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.nio.file.Path;
import java.util.concurrent.Callable;

@Command(name = "synth", mixinStandardHelpOptions = true,
        description = "Write a checkpoint with a real preset's config and shapes, random weights and a real tokenizer.")
final class SynthCommand implements Callable<Integer> {
    @Option(names = "--preset", required = true, description = "tiny, tiny-llama3, tiny-qwen3, qwen2.5-0.5b, qwen2.5-1.5b, "
            + "qwen2.5-3b, llama-3.2-1b, llama-3.2-3b, qwen3-0.6b, qwen3-1.7b, qwen3-4b, qwen2.5-7b, llama-3.1-8b or qwen3-8b")
    String preset;
    @Option(names = "--dtype", defaultValue = "bf16", description = "bf16, f16 or f32 (default: ${DEFAULT-VALUE})")
    String dtype;
    @Option(names = "--seed", defaultValue = "0", description = "random seed (default: ${DEFAULT-VALUE})")
    long seed;
    @Option(names = "--arch", description = "qwen2, llama or qwen3: another family with the preset's shapes (default: the "
            + "preset's own)")
    String arch;
    @Option(names = "--untied", description = "give the model its own lm_head instead of sharing the embedding")
    boolean untied;
    @Option(names = "--max-shard-mb", defaultValue = "5000", description = "largest weight file in MB (10^6 bytes): "
            + "bigger models are written in shards with model.safetensors.index.json, as Hugging Face writes them "
            + "(default: ${DEFAULT-VALUE}, transformers' 5GB)")
    long maxShardMb;
    @Option(names = "--out", required = true, description = "output folder")
    Path out;
    @Option(names = "--json", description = "print one JSON object")
    boolean json;

    @Override
    public Integer call() {
        Preset p = Preset.parse(preset);
        if (maxShardMb < 1 || maxShardMb > 1_000_000) {
            throw new IllegalArgumentException("--max-shard-mb must be between 1 and 1000000, got " + maxShardMb);
        }
        DType d = switch (dtype.toLowerCase()) {
            case "bf16" -> DType.BF16;
            case "f16", "fp16" -> DType.F16;
            case "f32", "fp32" -> DType.F32;
            default -> throw new IllegalArgumentException("--dtype must be bf16, f16 or f32, got '" + dtype + "'");
        };
        Architecture a = arch == null ? p.architecture() : Architecture.fromModelType(arch.toLowerCase());
        SyntheticCheckpoint.Options opt = SyntheticCheckpoint.Options.of(p, d, seed);
        opt = new SyntheticCheckpoint.Options(p, a, opt.tied() && !untied, d, seed);
        long t0 = System.nanoTime();
        try (ProgressBar bar = new ProgressBar("synth")) {
            SyntheticCheckpoint.write(opt, out, maxShardMb * 1_000_000L, bar);
            bar.finish();
        }
        double secs = (System.nanoTime() - t0) / 1e9;
        if (json) {
            new Json().put("out", out.toAbsolutePath().toString()).put("preset", p.id()).put("seconds", secs).print();
        } else {
            System.out.printf("wrote %s (%s, %s, seed %d) to %s in %.1fs%n", p.id(), a.modelType(), d, seed, out, secs);
        }
        return 0;
    }
}
