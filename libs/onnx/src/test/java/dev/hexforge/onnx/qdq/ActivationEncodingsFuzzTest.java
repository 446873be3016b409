package dev.hexforge.onnx.qdq;

import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.hexforge.contracts.HexforgeException;
import dev.hexforge.testing.Fuzzing;

import java.nio.file.Files;
import java.nio.file.Path;

/**
 * A quantized checkpoint's {@code activations.json} (the calibrated activation ranges an export turns into QDQ and
 * AIMET encodings), of any bytes: read, or refused naming what is wrong. A tenant can upload such a checkpoint.
 */
class ActivationEncodingsFuzzTest {
    @FuzzTest(maxDuration = Fuzzing.DURATION)
    void file(byte[] bytes) throws Exception {
        Path file = Files.write(Fuzzing.emptyFolder().resolve(ActivationEncodings.FILE), bytes);
        Fuzzing.refusedClearly(() -> ActivationEncodings.read(file), HexforgeException.class);
    }
}
