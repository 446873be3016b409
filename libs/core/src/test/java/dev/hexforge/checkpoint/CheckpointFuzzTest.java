package dev.hexforge.checkpoint;

import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.hexforge.contracts.HexforgeException;
import dev.hexforge.testing.Fixtures;
import dev.hexforge.testing.Fuzzing;

import java.nio.file.Files;
import java.nio.file.Path;

/**
 * A model folder's {@code config.json} and shard index of any bytes: the checkpoint opens (its config read, its
 * weights scanned for NaN and Inf) or is refused naming what is wrong.
 */
class CheckpointFuzzTest {
    @FuzzTest(maxDuration = Fuzzing.DURATION)
    void config(byte[] bytes) throws Exception {
        Path dir = Fuzzing.emptyFolder();
        Files.write(dir.resolve("config.json"), bytes);
        Fuzzing.refusedClearly(() -> ModelConfig.read(dir), HexforgeException.class);
    }

    /** The tiny model's config and weights as one shard, written once: each input is only the index beside them. */
    private static Path sharded;

    @FuzzTest(maxDuration = Fuzzing.DURATION)
    void shardIndex(byte[] bytes) throws Exception {
        if (sharded == null) {
            sharded = Files.createTempDirectory("hexforge-fuzz-shards");
            Path model = Fixtures.qwen2Tiny();
            Files.copy(model.resolve("config.json"), sharded.resolve("config.json"));
            Files.copy(model.resolve("model.safetensors"), sharded.resolve("model-00001-of-00001.safetensors"));
            sharded.toFile().deleteOnExit();
        }
        Path dir = sharded;
        Files.write(dir.resolve("model.safetensors.index.json"), bytes);
        Fuzzing.refusedClearly(() -> {
            try (Checkpoint c = Checkpoint.open(dir)) {
                c.config();
            }
        }, HexforgeException.class);
    }
}
