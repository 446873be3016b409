package dev.hexforge.synth;

import dev.hexforge.checkpoint.Architecture;
import dev.hexforge.checkpoint.Checkpoint;
import dev.hexforge.checkpoint.ModelConfig;
import dev.hexforge.checkpoint.RopeScaling;
import dev.hexforge.memory.MemoryPlan;
import dev.hexforge.progress.Progress;
import dev.hexforge.safetensors.DType;
import dev.hexforge.safetensors.SafetensorsFile;
import dev.hexforge.safetensors.ShardedWriter;
import dev.hexforge.safetensors.TensorStore;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The 7-8B presets against the published models, and checkpoints written in shards as Hugging Face writes them. */
class PresetTest {
    @TempDir
    Path tmp;

    static ModelConfig config(Preset p) {
        return SyntheticCheckpoint.config(SyntheticCheckpoint.Options.of(p, DType.BF16, 0));
    }

    @Test
    void theSevenToEightBillionPresetsHaveThePublishedParameterCounts() {
        // the counts the model cards give (safetensors totals), which need the right shapes and an untied head
        assertEquals(7_615_616_512L, MemoryPlan.parameters(config(Preset.QWEN2_5_7B)));
        assertEquals(8_030_261_248L, MemoryPlan.parameters(config(Preset.LLAMA_3_1_8B)));
        assertEquals(8_190_735_360L, MemoryPlan.parameters(config(Preset.QWEN3_8B)));
        for (Preset p : List.of(Preset.QWEN2_5_7B, Preset.LLAMA_3_1_8B, Preset.QWEN3_8B)) {
            assertFalse(config(p).tieWordEmbeddings(), p.id());
        }
    }

    @Test
    void llama31HasItsOwnRopeScalingAndQwen3ItsHeadNorms() {
        ModelConfig llama = config(Preset.LLAMA_3_1_8B);
        assertEquals(Architecture.LLAMA, llama.architecture());
        assertEquals(RopeScaling.llama3(8, 1, 4, 8192), llama.ropeScaling());
        assertEquals(128, llama.headDim());
        ModelConfig qwen3 = config(Preset.QWEN3_8B);
        assertTrue(qwen3.qkNorm());
        assertEquals(128, qwen3.headDim());
        ModelConfig qwen25 = config(Preset.QWEN2_5_7B);
        assertTrue(qwen25.attentionBias());
        assertEquals(4, qwen25.numKvHeads());
        assertEquals(152064, qwen25.vocabSize());
    }

    @Test
    void aCheckpointLargerThanAShardIsWrittenInShardsWithAnIndex() throws IOException {
        SyntheticCheckpoint.Options o = new SyntheticCheckpoint.Options(Preset.TINY, Architecture.QWEN2, false, DType.BF16, 3);
        Path single = tmp.resolve("single");
        Path sharded = tmp.resolve("sharded");
        SyntheticCheckpoint.write(o, single, Progress.NONE);
        SyntheticCheckpoint.write(o, sharded, 300_000, Progress.NONE);
        assertTrue(Files.isRegularFile(single.resolve(TensorStore.SINGLE_FILE)));
        assertFalse(Files.exists(single.resolve(TensorStore.INDEX_FILE)));
        List<String> shards;
        try (Stream<Path> s = Files.list(sharded)) {
            shards = s.map(p -> p.getFileName().toString()).filter(n -> n.endsWith(".safetensors")).sorted().toList();
        }
        assertTrue(shards.size() >= 3, shards.toString());
        assertEquals(ShardedWriter.shardName(1, shards.size()), shards.get(0));
        for (String name : shards) {
            try (SafetensorsFile f = SafetensorsFile.open(sharded.resolve(name))) {
                long bytes = f.tensors().stream().mapToLong(t -> t.numel() * t.dtype().bytes()).sum();
                // a shard is over the size only when one tensor is (the embedding, 2048 x 128 bf16 = 524288 bytes)
                assertTrue(bytes <= 300_000 || f.tensors().size() == 1, name + " holds " + bytes + " bytes");
            }
        }
        try (Checkpoint a = Checkpoint.open(single); Checkpoint b = Checkpoint.open(sharded)) {
            assertEquals(a.tensors().keySet(), b.tensors().keySet());
            assertEquals(shards.size(), b.store().files().size());
            for (String name : a.tensors().keySet()) {
                ByteBuffer x = a.store().bytes(name);
                ByteBuffer y = b.store().bytes(name);
                assertEquals(x, y, name);
            }
        }
    }
}
