package dev.hexforge.lora;

import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.hexforge.checkpoint.ModelConfig;
import dev.hexforge.contracts.HexforgeException;
import dev.hexforge.lora.data.DatasetReader;
import dev.hexforge.testing.Fixtures;
import dev.hexforge.testing.Fuzzing;

import java.nio.file.Files;
import java.nio.file.Path;

/**
 * What a tenant brings to fine-tuning and merging: a PEFT adapter folder (its {@code adapter_config.json}, its
 * weights) and a training data file, of any bytes: read, or refused naming what is wrong.
 */
class LoraFuzzTest {
    private static final Path ADAPTER = Fixtures.root().resolve("lora-task/reference_adapter");
    private static ModelConfig base;

    private static ModelConfig base() {
        if (base == null) {
            base = ModelConfig.read(Fixtures.qwen2Tiny());
        }
        return base;
    }

    @FuzzTest(maxDuration = Fuzzing.DURATION)
    void adapterConfig(byte[] bytes) throws Exception {
        Path dir = Fuzzing.emptyFolder();
        Files.write(dir.resolve("adapter_config.json"), bytes);
        Files.copy(ADAPTER.resolve("adapter_model.safetensors"), dir.resolve("adapter_model.safetensors"));
        Fuzzing.refusedClearly(() -> LoraAdapter.read(dir, base()), HexforgeException.class);
    }

    @FuzzTest(maxDuration = Fuzzing.DURATION)
    void adapterWeights(byte[] bytes) throws Exception {
        Path dir = Fuzzing.emptyFolder();
        Files.copy(ADAPTER.resolve("adapter_config.json"), dir.resolve("adapter_config.json"));
        Files.write(dir.resolve("adapter_model.safetensors"), bytes);
        Fuzzing.refusedClearly(() -> LoraAdapter.read(dir, base()), HexforgeException.class);
    }

    /** The first byte picks the file's kind (.jsonl, .json, .txt), the rest is its content. */
    @FuzzTest(maxDuration = Fuzzing.DURATION)
    void trainingData(byte[] bytes) throws Exception {
        if (bytes.length == 0) {
            return;
        }
        String ext = switch (Math.floorMod(bytes[0], 3)) {
            case 0 -> ".jsonl";
            case 1 -> ".json";
            default -> ".txt";
        };
        Path file = Fuzzing.emptyFolder().resolve("data" + ext);
        Files.write(file, java.util.Arrays.copyOfRange(bytes, 1, bytes.length));
        Fuzzing.refusedClearly(() -> DatasetReader.read(file), HexforgeException.class);
    }
}
