package dev.hexforge.gateway.job;

import dev.hexforge.checkpoint.ModelConfig;
import dev.hexforge.contracts.JobSpecReader;
import dev.hexforge.contracts.Stage;
import dev.hexforge.memory.MemoryPlan;
import dev.hexforge.safetensors.DType;
import dev.hexforge.synth.Preset;
import dev.hexforge.synth.SyntheticCheckpoint;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** A submitted job's stages as the memory estimates its submission is checked against. */
class JobMemoryTest {
    private static ModelConfig config(Preset p) {
        return SyntheticCheckpoint.config(SyntheticCheckpoint.Options.of(p, DType.BF16, 0));
    }

    @Test
    void aJobsStagesAreEstimatedInOrder() {
        List<MemoryPlan.Estimate> plan = JobMemory.of(JobSpecReader.read("{\"model\": \"/m\", \"stages\": [\"finetune\", \"merge\", "
                + "\"quantize\", \"export\", \"sign\"], \"finetune\": {\"data\": \"/d\"}}"), config(Preset.QWEN2_5_0_5B));
        assertEquals(List.of(Stage.FINETUNE, Stage.MERGE, Stage.QUANTIZE, Stage.EXPORT), plan.stream().map(MemoryPlan.Estimate::stage).toList());
    }

    @Test
    void atSubmissionTheConfigsTorchDtypeDecidesWhetherTheFrozenWeightsAreMapped() {
        ModelConfig c = config(Preset.QWEN2_5_0_5B); // bf16: the fine-tune maps its frozen weights
        assertEquals(MemoryPlan.finetune(c, true, 1, 128).bytes(), JobMemory.of(JobSpecReader.read("{\"model\": \"/m\", \"stages\": "
                + "[\"finetune\"], \"finetune\": {\"data\": \"/d\", \"batch\": 1, \"maxLength\": 128}}"), c).get(0).bytes());
    }
}
