package dev.hexforge.tokenizer;

import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.hexforge.contracts.HexforgeException;
import dev.hexforge.testing.Fuzzing;

import java.nio.file.Files;
import java.nio.file.Path;

/**
 * A {@code tokenizer.json} of any bytes: the check every pass makes before shipping it passes and the tokenizer loads
 * and round-trips text, or it is refused naming what is wrong (the Rust tokenizer behind it included).
 */
class TokenizerFuzzTest {
    @FuzzTest(maxDuration = Fuzzing.DURATION)
    void tokenizerJson(byte[] bytes) throws Exception {
        Path dir = Fuzzing.emptyFolder();
        Files.write(dir.resolve("tokenizer.json"), bytes);
        Fuzzing.refusedClearly(() -> {
            Tokenizer.check(dir, 1000);
            try (Tokenizer t = Tokenizer.load(dir)) {
                t.decode(t.encode("Hello, wörld 12"));
            }
        }, HexforgeException.class);
    }
}
