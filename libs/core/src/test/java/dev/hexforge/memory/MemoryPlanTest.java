package dev.hexforge.memory;

import dev.hexforge.checkpoint.ModelConfig;
import dev.hexforge.contracts.ErrorCode;
import dev.hexforge.contracts.HexforgeException;
import dev.hexforge.contracts.JobSpecReader;
import dev.hexforge.contracts.Stage;
import dev.hexforge.safetensors.DType;
import dev.hexforge.synth.Preset;
import dev.hexforge.synth.SyntheticCheckpoint;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class MemoryPlanTest {
    static ModelConfig config(Preset p) {
        return SyntheticCheckpoint.config(SyntheticCheckpoint.Options.of(p, DType.BF16, 0));
    }

    @Test
    void parametersAreCountedAsTheCheckpointHoldsThem() {
        // the tensors of `hexforge synth` checkpoints, counted from their safetensors headers
        assertEquals(494_032_768L, MemoryPlan.parameters(config(Preset.QWEN2_5_0_5B)));
        assertEquals(1_543_714_304L, MemoryPlan.parameters(config(Preset.QWEN2_5_1_5B)));
    }

    @Test
    void theRtnEstimateIsCloseToWhatWasMeasured() {
        // measured: `hexforge quantize` (rtn, int8, int8 embedding) on the synthetic 0.5B shape kept 3.9 GB live after
        // a full collection
        long bytes = MemoryPlan.quantize(config(Preset.QWEN2_5_0_5B), "rtn", 0, 0).bytes();
        assertTrue(bytes >= 3.9e9 && bytes < 5.0e9, "at least what was measured, not far above: " + MemoryPlan.gb(bytes));
        assertTrue(MemoryPlan.quantize(config(Preset.QWEN2_5_0_5B), "gptq", 128, 512).bytes() > bytes, "calibration costs more");
    }

    @Test
    void aPassTheProcessCannotHoldIsRefusedWithBothFigures() {
        MemoryPlan.Estimate e = MemoryPlan.quantize(config(Preset.QWEN2_5_1_5B), "rtn", 0, 0);
        HexforgeException x = assertThrows(HexforgeException.class, () -> MemoryPlan.require(e, 6L << 30));
        assertEquals(ErrorCode.OUT_OF_MEMORY, x.code());
        assertTrue(x.getMessage().startsWith("quantize needs about ") && x.getMessage().contains("1.54 B parameters")
                && x.getMessage().endsWith("this process can have 6.4 GB"), x.getMessage());
        assertTrue(x.hint().contains("-Xmx"), x.hint());
        MemoryPlan.require(e, 32L << 30); // fits: no exception
    }

    @Test
    void aJobsStagesAreEstimatedInOrder() {
        List<MemoryPlan.Estimate> plan = MemoryPlan.forJob(JobSpecReader.read("{\"model\": \"/m\", \"stages\": [\"finetune\", \"merge\", "
                + "\"quantize\", \"export\", \"sign\"], \"finetune\": {\"data\": \"/d\"}}"), config(Preset.QWEN2_5_0_5B));
        assertEquals(List.of(Stage.FINETUNE, Stage.MERGE, Stage.QUANTIZE, Stage.EXPORT), plan.stream().map(MemoryPlan.Estimate::stage).toList());
    }
}
