package dev.hexforge.pass;

import dev.hexforge.checkpoint.Checkpoint;
import dev.hexforge.checkpoint.NonFinite;
import dev.hexforge.contracts.Stage;
import dev.hexforge.lora.LoraAdapter;
import dev.hexforge.lora.LoraMerge;
import dev.hexforge.memory.MemoryPlan;
import dev.hexforge.tokenizer.Tokenizer;

import java.nio.file.Path;

/** The merge stage: a PEFT LoRA adapter merged into its base model (PEFT's merge_and_unload), a full Hugging Face folder. */
public final class MergePass {
    public static final String KIND = "hf-model";

    public record Result(Path model, Report report) {
    }

    /** What the merge stage reports: the linears an adapter changed, its rank and scale, the time taken. */
    public record Report(int mergedLinears, int rank, float scale, double seconds) {
    }

    private MergePass() {
    }

    public static Result run(Path base, NonFinite nonFinite, Path adapter, Path out) {
        long t0 = System.nanoTime();
        try (Checkpoint ckpt = Checkpoint.open(base, nonFinite)) {
            MemoryPlan.require(MemoryPlan.streaming(Stage.MERGE, ckpt.config()));
            Tokenizer.check(base, ckpt.config().vocabSize()); // the merged folder ships it
            LoraAdapter a = LoraAdapter.read(adapter, ckpt.config());
            LoraMerge.merge(ckpt, a, out);
            return new Result(out, new Report(a.deltas().size(), a.config().r(), a.config().scale(),
                    (System.nanoTime() - t0) / 1e9));
        }
    }
}
