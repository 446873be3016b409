package dev.hexforge.pass;

import dev.hexforge.checkpoint.Checkpoint;
import dev.hexforge.contracts.Stage;
import dev.hexforge.lora.LoraAdapter;
import dev.hexforge.lora.LoraMerge;
import dev.hexforge.memory.MemoryPlan;

import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

/** The merge stage: a PEFT LoRA adapter merged into its base model (PEFT's merge_and_unload), a full Hugging Face folder. */
public final class MergePass {
    public static final String KIND = "hf-model";

    public record Result(Path model, Map<String, Object> report) {
    }

    private MergePass() {
    }

    public static Result run(Path base, Path adapter, Path out) {
        long t0 = System.nanoTime();
        try (Checkpoint ckpt = Checkpoint.open(base)) {
            MemoryPlan.require(MemoryPlan.streaming(Stage.MERGE, ckpt.config()));
            LoraAdapter a = LoraAdapter.read(adapter, ckpt.config());
            LoraMerge.merge(ckpt, a, out);
            Map<String, Object> report = new LinkedHashMap<>();
            report.put("mergedLinears", a.deltas().size());
            report.put("rank", a.config().r());
            report.put("scale", a.config().scale());
            report.put("seconds", (System.nanoTime() - t0) / 1e9);
            return new Result(out, report);
        }
    }
}
