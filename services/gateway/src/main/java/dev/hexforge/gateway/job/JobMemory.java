package dev.hexforge.gateway.job;

import dev.hexforge.checkpoint.ModelConfig;
import dev.hexforge.contracts.JobSpec;
import dev.hexforge.contracts.Stage;
import dev.hexforge.memory.MemoryPlan;

import java.util.ArrayList;
import java.util.List;

/** A job's settings as the memory its stages will need: the stage passes' estimates ({@link MemoryPlan}) for its model. */
final class JobMemory {
    private JobMemory() {
    }

    /** The estimates of a job's stages that run on the model (compile, sign and benchmark need next to nothing). */
    static List<MemoryPlan.Estimate> of(JobSpec spec, ModelConfig c) {
        List<MemoryPlan.Estimate> out = new ArrayList<>();
        for (Stage s : spec.stageList()) {
            switch (s) {
                case FINETUNE -> out.add(MemoryPlan.finetune(c, "bfloat16".equals(c.torchDtype()), spec.finetune().batch(),
                        spec.finetune().maxLength()));
                case QUANTIZE -> out.add(MemoryPlan.quantize(c, spec.quantize().method(), spec.quantize().calibrationSamples(),
                        spec.quantize().calibrationLength(), spec.quantize().auto().maxExtraBytesPercent() > 0,
                        Runtime.getRuntime().availableProcessors()));
                case MERGE, EXPORT -> out.add(MemoryPlan.streaming(s, c));
                default -> {
                }
            }
        }
        return out;
    }
}
