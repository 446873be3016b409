package dev.hexforge.onnx.runtime;

import dev.hexforge.checkpoint.Checkpoint;
import dev.hexforge.eval.Perplexity;
import dev.hexforge.generate.CausalLm;
import dev.hexforge.onnx.export.DecoderExporter;
import dev.hexforge.onnx.export.ExportInfo;
import dev.hexforge.onnx.export.ExportOptions;
import dev.hexforge.onnx.export.Variant;
import dev.hexforge.progress.Progress;
import dev.hexforge.testing.Fixtures;
import dev.hexforge.tokenizer.Tokenizer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A static export scored a part at a time gives the perplexity the independent reference gives and exactly what the
 * same graphs give run window by window as one pipeline. (qwen2-tiny cut into three parts by a 2 MB limit stands in
 * for a model too big for one session.)
 */
class PartwisePromptTest {
    @TempDir
    Path tmp;

    @Test
    void aSplitExportScoredPartByPartGivesTheReferencePerplexityAndThePipelinesTokens() throws Exception {
        Path split = tmp.resolve("split");
        try (Checkpoint ckpt = Checkpoint.open(Fixtures.qwen2Tiny())) {
            DecoderExporter.export(ckpt, split, new ExportOptions(Variant.STATIC, 128, 129, 17, 2_000_000), Progress.NONE);
        }
        assertEquals(3, ExportInfo.read(split).roles("prompt").size());
        int[] ids;
        try (Tokenizer tok = Tokenizer.load(Fixtures.qwen2Tiny())) {
            ids = tok.encode(Files.readString(Fixtures.root().resolve("corpus/eval.txt")));
        }
        Perplexity.Scored parts = PartwisePrompt.score(split, ids, 1);
        double reference = Fixtures.json(Fixtures.reference("perplexity.json")).path("results").path("float32")
                .path("eval.txt").path("perplexity").asDouble();
        assertEquals(reference, parts.result().perplexity(), reference * 1e-5);
        Perplexity.Scored pipeline;
        try (CausalLm lm = OnnxLm.open(split, 1)) {
            pipeline = Perplexity.score(lm, ids, 128, null);
        }
        assertEquals(pipeline.result(), parts.result());
        assertArrayEquals(pipeline.top1(), parts.top1());
        assertTrue(parts.result().windows() > 1);
    }

    @Test
    void aGenieExportScoredPartByPartIsItsPipeline() throws Exception {
        Path genie = tmp.resolve("genie");
        try (Checkpoint ckpt = Checkpoint.open(Fixtures.qwen2Tiny())) {
            DecoderExporter.export(ckpt, genie, new ExportOptions(Variant.GENIE, 128, 512, 17, 2_000_000), Progress.NONE);
        }
        int[] ids;
        try (Tokenizer tok = Tokenizer.load(Fixtures.qwen2Tiny())) {
            ids = tok.encode(Files.readString(Fixtures.root().resolve("corpus/eval.txt")));
        }
        Perplexity.Scored parts = PartwisePrompt.score(genie, ids, 1);
        Perplexity.Scored pipeline;
        try (CausalLm lm = OnnxLm.open(genie, 1)) {
            pipeline = Perplexity.score(lm, ids, 128, null);
        }
        assertEquals(pipeline.result(), parts.result());
        assertArrayEquals(pipeline.top1(), parts.top1());
        double reference = Fixtures.json(Fixtures.reference("perplexity.json")).path("results").path("float32")
                .path("eval.txt").path("perplexity").asDouble();
        assertEquals(reference, parts.result().perplexity(), reference * 1e-4);
    }

    @Test
    void aDynamicExportIsRefusedByName() {
        Path dynamic = tmp.resolve("dynamic");
        try (Checkpoint ckpt = Checkpoint.open(Fixtures.qwen2Tiny())) {
            DecoderExporter.export(ckpt, dynamic, ExportOptions.dynamic(), Progress.NONE);
        }
        String m = assertThrows(IllegalArgumentException.class, () -> PartwisePrompt.score(dynamic, new int[256], 1)).getMessage();
        assertTrue(m.contains("static or Genie export"), m);
    }
}
