package dev.hexforge.quant.gate;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.hexforge.checkpoint.Checkpoint;
import dev.hexforge.eval.Perplexity;
import dev.hexforge.testing.Fixtures;
import dev.hexforge.tokenizer.Tokenizer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

/** The gate's float baseline: the reference perplexity, scored by layer, computed once per model and text. */
class FloatBaselineTest {
    @TempDir
    Path tmp;

    @Test
    void theBaselineIsTheReferencePerplexityAndIsReadFromTheCacheTheSecondTime() throws IOException {
        ObjectMapper json = new ObjectMapper();
        Path cache = tmp.resolve("cache");
        try (Checkpoint ckpt = Checkpoint.open(Fixtures.qwen2Tiny()); Tokenizer tok = Tokenizer.load(Fixtures.qwen2Tiny())) {
            GateText all = GateText.of(Fixtures.root().resolve("corpus/eval.txt"), tok, 128, Integer.MAX_VALUE, 512);
            assertEquals(223 * 128, all.ids().length, "the reference's 223 whole windows");
            assertArrayEquals(java.util.Arrays.copyOf(Fixtures.evalTxtIds(), all.ids().length), all.ids());
            Perplexity.Scored first = FloatBaseline.of(ckpt, all, cache);
            double reference = Fixtures.json(Fixtures.reference("perplexity.json")).path("results").path("float32")
                    .path("eval.txt").path("perplexity").asDouble();
            assertEquals(reference, first.result().perplexity(), reference * 1e-5);

            List<Path> entries;
            try (Stream<Path> s = Files.list(cache.resolve("gate-baseline"))) {
                entries = s.toList();
            }
            assertEquals(1, entries.size());
            ObjectNode entry = (ObjectNode) json.readTree(entries.get(0).toFile());
            entry.put("perplexity", 42.0);
            json.writeValue(entries.get(0).toFile(), entry);
            Perplexity.Scored second = FloatBaseline.of(ckpt, all, cache);
            assertEquals(42.0, second.result().perplexity(), "read from the cache, not recomputed");
            assertArrayEquals(first.top1(), second.top1());

            GateText shorter = GateText.of(Fixtures.root().resolve("corpus/eval.txt"), tok, 128, 1024, 512);
            assertEquals(1024, shorter.ids().length);
            Perplexity.Scored other = FloatBaseline.of(ckpt, shorter, cache);
            assertNotEquals(42.0, other.result().perplexity(), "another text is another entry");
            assertEquals(8 * 127, other.top1().length);
        }
    }
}
