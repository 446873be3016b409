package dev.hexforge.onnx.lora;

import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.hexforge.contracts.HexforgeException;
import dev.hexforge.testing.Fuzzing;

/**
 * An ONNX Runtime adapter file ({@code .onnx_adapter}) of any bytes, as {@code generate} / {@code eval --adapter}
 * take one from anyone: read, or refused naming what is wrong.
 */
class OnnxAdapterFileFuzzTest {
    @FuzzTest(maxDuration = Fuzzing.DURATION)
    void file(byte[] bytes) throws Exception {
        Fuzzing.refusedClearly(() -> OnnxAdapterFile.parse("fuzzed.onnx_adapter", bytes), HexforgeException.class);
    }
}
