package dev.hexforge.quant.calib;

import dev.hexforge.quant.QuantizationException;
import dev.hexforge.testing.Fixtures;
import dev.hexforge.tokenizer.Tokenizer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class CalibrationSetTest {
    @TempDir
    Path tmp;
    static Tokenizer tok;

    @BeforeAll
    static void load() {
        tok = Tokenizer.load(Fixtures.qwen2Tiny());
    }

    @AfterAll
    static void close() {
        tok.close();
    }

    Path lines(int n) throws Exception {
        Path f = tmp.resolve("c" + n + ".jsonl");
        Files.writeString(f, IntStream.range(0, n).mapToObj(i -> "{\"text\": \"sample number " + i + " of the set\"}")
                .collect(Collectors.joining("\n")));
        return f;
    }

    @Test
    void theBundledSetIsSampledDeterministicallyWithItsLanguageMix() {
        CalibrationSet a = CalibrationSet.load(Fixtures.root().resolve("calib.jsonl"), tok, 32, 64, 7);
        CalibrationSet b = CalibrationSet.load(Fixtures.root().resolve("calib.jsonl"), tok, 32, 64, 7);
        assertEquals(32, a.sequences().size());
        for (int i = 0; i < 32; i++) {
            assertTrue(java.util.Arrays.equals(a.sequences().get(i), b.sequences().get(i)));
            assertTrue(a.sequences().get(i).length <= 64);
        }
        assertTrue(a.coverage().scriptShare().containsKey("Chinese (Han)") && a.coverage().scriptShare().containsKey("Latin"));
    }

    @Test
    void fewerSamplesThanAskedWarnsAboveTheFloorAndFailsBelowIt() throws Exception {
        CalibrationSet some = CalibrationSet.load(lines(10), tok, 128, 64, 0);
        assertEquals(10, some.sequences().size());
        assertTrue(some.warnings().stream().anyMatch(w -> w.contains("asked for 128") && w.contains("has 10")), some.warnings().toString());
        QuantizationException e = assertThrows(QuantizationException.class, () -> CalibrationSet.load(lines(3), tok, 128, 64, 0));
        assertTrue(e.getMessage().contains("fewer than the floor of 8"), e.getMessage());
    }

    @Test
    void chatSamplesUseTheChatTemplateAndBadOnesAreNamedByLine() throws Exception {
        Path chat = tmp.resolve("chat.jsonl");
        Files.writeString(chat, IntStream.range(0, 8).mapToObj(i -> "{\"messages\": [{\"role\": \"user\", \"content\": \"hi " + i
                + "\"}, {\"role\": \"assistant\", \"content\": \"hello\"}]}").collect(Collectors.joining("\n")));
        CalibrationSet s = CalibrationSet.load(chat, tok, 8, 64, 0);
        assertEquals(2046, s.sequences().get(0)[0], "starts with <|im_start|>");
        Path bad = tmp.resolve("bad.jsonl");
        Files.writeString(bad, "{\"text\": \"ok\"}\n{\"prompt\": \"no text field\"}\n");
        QuantizationException e = assertThrows(QuantizationException.class, () -> CalibrationSet.load(bad, tok, 8, 64, 0));
        assertTrue(e.getMessage().contains("line 2"), e.getMessage());
    }
}
