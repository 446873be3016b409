package dev.hexforge.safetensors;

import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.hexforge.contracts.HexforgeException;
import dev.hexforge.testing.Fuzzing;

import java.nio.file.Files;
import java.nio.file.Path;

/** A safetensors file of any bytes opens, and every tensor it lists reads, or it is refused naming what is wrong. */
class SafetensorsFuzzTest {
    @FuzzTest(maxDuration = Fuzzing.DURATION)
    void file(byte[] bytes) throws Exception {
        Path file = Files.write(Fuzzing.emptyFolder().resolve("model.safetensors"), bytes);
        Fuzzing.refusedClearly(() -> {
            try (SafetensorsFile f = SafetensorsFile.open(file)) {
                for (TensorInfo t : f.tensors()) {
                    if (t.end() - t.begin() <= 1 << 20) {
                        f.bytes(t.name());
                    }
                }
            }
        }, HexforgeException.class);
    }
}
