package dev.hexforge.memory;

import dev.hexforge.checkpoint.ModelConfig;
import dev.hexforge.contracts.ErrorCode;
import dev.hexforge.contracts.HexforgeException;
import dev.hexforge.safetensors.DType;
import dev.hexforge.synth.Preset;
import dev.hexforge.synth.SyntheticCheckpoint;
import org.junit.jupiter.api.Test;


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
    void theQuantizeEstimateIsOneLayerNotTheModel() {
        // measured (docs/benchmarks.md): `hexforge quantize` (rtn, int8, int8 embedding) on the synthetic 1.5B shape,
        // 2 cores, peaked at 1.16 GB of heap after young collections (the reports' float32 embedding and its int8 copy)
        long bytes = MemoryPlan.quantize(config(Preset.QWEN2_5_1_5B), "rtn", 0, 0, false, 2).bytes();
        assertTrue(bytes >= 1.16e9 && bytes < 1.6e9, "at least what was measured, not far above: " + MemoryPlan.gb(bytes));
        long small = MemoryPlan.quantize(config(Preset.QWEN2_5_0_5B), "rtn", 0, 0, false, 2).bytes();
        assertTrue(small < bytes && small < 1e9, "by the largest tensor: " + MemoryPlan.gb(small));
        assertTrue(MemoryPlan.quantize(config(Preset.QWEN2_5_1_5B), "rtn", 0, 0, false, 16).bytes() > bytes, "more cores, more reports at once");
        long gptq = MemoryPlan.quantize(config(Preset.QWEN2_5_1_5B), "gptq", 128, 128, false, 2).bytes();
        assertTrue(gptq > bytes && gptq < 6e9, "a layer, its activations and Hessians: " + MemoryPlan.gb(gptq));
        assertTrue(MemoryPlan.quantize(config(Preset.QWEN2_5_1_5B), "rtn", 0, 0, true, 2).bytes() > 4 * MemoryPlan.parameters(
                config(Preset.QWEN2_5_1_5B)), "the sensitivity scan holds the float model");
    }

    @Test
    void aPassTheProcessCannotHoldIsRefusedWithBothFigures() {
        MemoryPlan.Estimate e = MemoryPlan.quantize(config(Preset.QWEN2_5_1_5B), "rtn", 0, 0, false, 2);
        HexforgeException x = assertThrows(HexforgeException.class, () -> MemoryPlan.require(e, 1L << 30));
        assertEquals(ErrorCode.OUT_OF_MEMORY, x.code());
        assertTrue(x.getMessage().startsWith("quantize needs about ") && x.getMessage().contains("rtn by layer")
                && x.getMessage().endsWith("this process can have 1.1 GB"), x.getMessage());
        assertTrue(x.hint().contains("-Xmx" + MemoryPlan.xmxGigabytes(e) + "g"), x.hint());
        // the -Xmx it suggests gives the process the heap it needs (the JVM keeps up to a tenth of -Xmx)
        assertTrue(MemoryPlan.xmxGigabytes(e) * (1L << 30) * 0.9 >= e.heap(), x.hint());
        MemoryPlan.require(e, 2L << 30); // fits: no exception
    }

    @Test
    void theReferenceForwardIsRefusedBeforeItLoadsAModelItCannotHold() {
        // `java -jar hexforge-cli.jar generate` on the 1.5B shape with the JVM's default heap (a quarter of 24 GB) ended
        // in an OutOfMemoryError while widening the weights
        MemoryPlan.Estimate e = MemoryPlan.referenceForward(config(Preset.QWEN2_5_1_5B), false);
        assertTrue(e.bytes() > 4 * MemoryPlan.parameters(config(Preset.QWEN2_5_1_5B)), MemoryPlan.gb(e.bytes()));
        HexforgeException x = assertThrows(HexforgeException.class, () -> MemoryPlan.require(e, 6L << 30));
        assertEquals(ErrorCode.OUT_OF_MEMORY, x.code());
        assertTrue(x.getMessage().startsWith("the Java reference forward needs about ")
                && x.getMessage().endsWith("this process can have 6.4 GB"), x.getMessage());
        assertTrue(x.hint().contains("-Xmx" + MemoryPlan.xmxGigabytes(e) + "g") && x.hint().contains("ONNX export")
                && !x.hint().contains("service"), x.hint());
        MemoryPlan.require(MemoryPlan.referenceForward(config(Preset.QWEN2_5_0_5B), false), 6L << 30);
    }

    @Test
    void gptqAtHalfABillionParametersFitsTheTwoGigabyteHeapItWasMeasuredIn() {
        // measured (docs/benchmarks.md, 2026-12-05): `hexforge quantize --method gptq --bits 4 --samples 128
        // --calib-len 128` on the synthetic 0.5B shape completes under -XX:+UseParallelGC -Xmx2g, at most 1.51 GB after
        // young collections; that collector's -Xmx2g is a maxMemory() of 1,908,932,608 bytes (one survivor space less)
        MemoryPlan.Estimate e = MemoryPlan.quantize(config(Preset.QWEN2_5_0_5B), "gptq", 128, 128, false, 2);
        assertTrue(e.heap() > 1.51e9 && e.heap() <= 1_908_932_608L, e.describe());
    }

    @Test
    void aBf16CheckpointsWeightsAreNotCountedOnTheHeap() {
        // measured (docs/benchmarks.md): `bench finetune` on the synthetic bf16 0.5B shape, batch 1 x 128, runs under
        // -Xmx500m and fails under -Xmx400m; with the weights in float32 it needed 2.2-2.4 GB
        MemoryPlan.Estimate mapped = MemoryPlan.finetune(config(Preset.QWEN2_5_0_5B), true, 1, 128);
        assertTrue(mapped.heap() > 400e6 && mapped.heap() < 700e6, mapped.describe());
        assertTrue(mapped.describe().contains("in the bf16 file, not on the heap"), mapped.describe());
        MemoryPlan.Estimate held = MemoryPlan.finetune(config(Preset.QWEN2_5_0_5B), false, 1, 128);
        assertTrue(held.bytes() > 6 * MemoryPlan.parameters(config(Preset.QWEN2_5_0_5B)), held.describe());
        // the 1.5B reference forward, refused under 6 GB in float32, fits a 1 GB heap when mapped
        MemoryPlan.require(MemoryPlan.referenceForward(config(Preset.QWEN2_5_1_5B), true), 1L << 30);
    }
}
