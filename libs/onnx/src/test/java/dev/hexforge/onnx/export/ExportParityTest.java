package dev.hexforge.onnx.export;

import com.fasterxml.jackson.databind.JsonNode;
import dev.hexforge.checkpoint.Checkpoint;
import dev.hexforge.eval.Perplexity;
import dev.hexforge.generate.CausalLm;
import dev.hexforge.generate.DecodeSession;
import dev.hexforge.generate.LogitRows;
import dev.hexforge.generate.Generator;
import dev.hexforge.onnx.runtime.OnnxLm;
import dev.hexforge.progress.Progress;
import dev.hexforge.safetensors.SafetensorsFile;
import dev.hexforge.testing.Fixtures;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.EnumMap;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Both export variants of qwen2-tiny, run on ONNX Runtime, against the PyTorch reference outputs. */
class ExportParityTest {
    @TempDir
    static Path tmp;
    static final Map<Variant, CausalLm> models = new EnumMap<>(Variant.class);

    @BeforeAll
    static void export() {
        try (Checkpoint ckpt = Checkpoint.open(Fixtures.qwen2Tiny())) {
            for (Variant v : Variant.values()) {
                ExportOptions opt = v == Variant.DYNAMIC ? ExportOptions.dynamic() : ExportOptions.staticShapes(128, 512);
                Path out = tmp.resolve(v.name().toLowerCase());
                DecoderExporter.export(ckpt, out, opt, Progress.NONE);
                models.put(v, OnnxLm.open(out, 2));
            }
        }
    }

    @AfterAll
    static void close() {
        models.values().forEach(CausalLm::close);
    }

    @ParameterizedTest
    @EnumSource(Variant.class)
    void logitsMatchReference(Variant v) {
        try (SafetensorsFile ref = SafetensorsFile.open(Fixtures.reference("logits.safetensors"))) {
            for (String key : new String[]{"en", "zh", "chatml"}) {
                long[] l = new long[(int) ref.info(key + ".input_ids").numel()];
                ref.bytes(key + ".input_ids").asLongBuffer().get(l);
                int[] ids = Arrays.stream(l).mapToInt(x -> (int) x).toArray();
                float[] expected = ref.floats(key + ".logits");
                float[][] got = models.get(v).start(ids.length).appendAll(ids);
                float max = 0;
                for (int t = 0; t < ids.length; t++) {
                    for (int i = 0; i < got[t].length; i++) {
                        max = Math.max(max, Math.abs(got[t][i] - expected[t * got[t].length + i]));
                    }
                }
                assertTrue(max <= 1e-4f, v + " " + key + ": max |dlogit| " + max);
            }
        }
    }

    @ParameterizedTest
    @EnumSource(Variant.class)
    void greedyContinuationsMatchWithKvCache(Variant v) {
        for (JsonNode p : Fixtures.json(Fixtures.reference("reference.json")).path("prompts")) {
            int[] input = Fixtures.ints(p.path("input_ids"));
            int[] expected = Fixtures.ints(p.path("greedy_new_ids"));
            int exact = p.path("greedy_exact_prefix_len").asInt();
            int[] got = Generator.generate(models.get(v), input, Generator.Options.greedy(expected.length), null);
            assertArrayEquals(Arrays.copyOf(expected, exact), Arrays.copyOf(got, exact), v + " " + p.path("name").asText());
        }
    }

    @ParameterizedTest
    @EnumSource(Variant.class)
    void perplexityMatchesReference(Variant v) {
        JsonNode expected = Fixtures.json(Fixtures.reference("perplexity.json")).path("results").path("float32").path("eval.txt");
        Perplexity.Result r = Perplexity.evaluate(models.get(v), Fixtures.evalTxtIds(), 128, null);
        assertEquals(expected.path("scored_tokens").asLong(), r.scoredTokens());
        double rel = Math.abs(r.perplexity() / expected.path("perplexity").asDouble() - 1);
        assertTrue(rel < 1e-3, v + ": perplexity " + r.perplexity());
    }

    @ParameterizedTest
    @EnumSource(Variant.class)
    void folderLayoutIsComplete(Variant v) {
        Path dir = tmp.resolve(v.name().toLowerCase());
        for (String f : new String[]{"config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json",
                "export.json", "onnx/model.onnx_data"}) {
            assertTrue(Files.isRegularFile(dir.resolve(f)), v + " lacks " + f);
        }
        if (v == Variant.DYNAMIC) {
            assertTrue(Files.isRegularFile(dir.resolve("onnx/model.onnx")));
            assertTrue(Files.isRegularFile(dir.resolve("genai_config.json")));
            JsonNode cfg = Fixtures.json(dir.resolve("config.json"));
            assertTrue(cfg.path("transformers.js_config").path("use_external_data_format").asBoolean());
            assertEquals("qwen2", cfg.path("model_type").asText(), "the original config is kept");
            JsonNode genai = Fixtures.json(dir.resolve("genai_config.json")).path("model").path("decoder");
            assertEquals("onnx/model.onnx", genai.path("filename").asText());
            assertEquals(2, genai.path("num_key_value_heads").asInt());
        } else {
            assertTrue(Files.isRegularFile(dir.resolve("onnx/prompt.onnx")));
            assertTrue(Files.isRegularFile(dir.resolve("onnx/token.onnx")));
        }
    }

    /**
     * A model opened to generate runs the head for the last position only (the session fails if the graph returns
     * more rows), and that row is the reference's; the graph's interface stays the Hugging Face one.
     */
    @org.junit.jupiter.api.Test
    void aGeneratingSessionComputesTheLastPositionsLogitsOnly() throws Exception {
        Path dir = tmp.resolve("dynamic");
        assertEquals("logits_from", ExportInfo.read(dir).logitsFrom());
        try (ai.onnxruntime.OrtSession plain = dev.hexforge.onnx.runtime.OrtSessions.open(dir.resolve("onnx/model.onnx"), 1)) {
            assertTrue(plain.getInputNames().stream().noneMatch(n -> n.contains("logits")), "inputs " + plain.getInputNames());
        }
        try (CausalLm last = OnnxLm.open(dir, 2, null, null, LogitRows.LAST);
             SafetensorsFile ref = SafetensorsFile.open(Fixtures.reference("logits.safetensors"))) {
            assertEquals(LogitRows.LAST, last.logitRows());
            for (String key : new String[]{"en", "zh", "chatml"}) {
                long[] l = new long[(int) ref.info(key + ".input_ids").numel()];
                ref.bytes(key + ".input_ids").asLongBuffer().get(l);
                int[] ids = Arrays.stream(l).mapToInt(x -> (int) x).toArray();
                float[] expected = ref.floats(key + ".logits");
                try (DecodeSession s = last.start(ids.length)) {
                    float[] got = s.append(ids);
                    int v = got.length;
                    float max = 0;
                    for (int i = 0; i < v; i++) {
                        max = Math.max(max, Math.abs(got[i] - expected[(ids.length - 1) * v + i]));
                    }
                    assertTrue(max <= 1e-4f, key + ": max |dlogit| " + max);
                    IllegalStateException e = assertThrows(IllegalStateException.class, () -> s.appendAll(new int[]{5, 6}));
                    assertTrue(e.getMessage().contains("LogitRows.ALL"), e.getMessage());
                }
            }
            for (JsonNode p : Fixtures.json(Fixtures.reference("reference.json")).path("prompts")) {
                int[] expected = Fixtures.ints(p.path("greedy_new_ids"));
                int exact = p.path("greedy_exact_prefix_len").asInt();
                int[] got = Generator.generate(last, Fixtures.ints(p.path("input_ids")), Generator.Options.greedy(expected.length), null);
                assertArrayEquals(Arrays.copyOf(expected, exact), Arrays.copyOf(got, exact), p.path("name").asText());
            }
        }
        try (CausalLm fixed = OnnxLm.open(tmp.resolve("static"), 1, null, null, LogitRows.LAST)) {
            assertEquals(LogitRows.ALL, fixed.logitRows(), "static graphs keep their fixed outputs for the NPU");
        }
    }

    /**
     * A generating session writes each step's row into buffers it allocated once (ONNX Runtime's pinned output):
     * every step's row is the one an every-row session computes, and the array handed back is the session's own.
     */
    @org.junit.jupiter.api.Test
    void aGeneratingSessionsStepsMatchEveryRowSessionsInItsOwnBuffer() {
        Path dir = tmp.resolve("dynamic");
        int[] prompt = {1, 872, 198, 1707, 11};
        int[] steps = {1879, 13, 576, 1974, 198, 40};
        try (CausalLm last = OnnxLm.open(dir, 1, null, null, LogitRows.LAST);
             CausalLm all = OnnxLm.open(dir, 1, null, null, LogitRows.ALL);
             DecodeSession a = last.start(prompt.length + steps.length);
             DecodeSession b = all.start(prompt.length + steps.length)) {
            float[] first = a.append(prompt);
            assertClose(b.append(prompt), first, "prompt");
            for (int i = 0; i < steps.length; i++) {
                float[] got = a.append(new int[]{steps[i]});
                assertTrue(got == first, "step " + i + " returns the session's buffer");
                assertClose(b.append(new int[]{steps[i]}), got, "step " + i);
            }
            assertEquals(prompt.length + steps.length, a.length());
        }
    }

    private static void assertClose(float[] expected, float[] got, String what) {
        assertEquals(expected.length, got.length, what);
        float max = 0;
        for (int i = 0; i < got.length; i++) {
            max = Math.max(max, Math.abs(got[i] - expected[i]));
        }
        assertTrue(max <= 1e-5f, what + ": max |dlogit| " + max);
    }

    /** An export made before the initializer existed (no logitsFrom in export.json) opens to generate with every row. */
    @org.junit.jupiter.api.Test
    void anOlderExportStillGeneratesWithEveryRow() throws Exception {
        Path older = tmp.resolve("older");
        Files.createDirectories(older.resolve("onnx"));
        try (var files = Files.walk(tmp.resolve("dynamic"))) {
            for (Path f : files.filter(Files::isRegularFile).toList()) {
                Path to = older.resolve(tmp.resolve("dynamic").relativize(f).toString());
                Files.createDirectories(to.getParent());
                Files.createSymbolicLink(to, f);
            }
        }
        Path info = older.resolve(ExportInfo.FILE);
        Files.delete(info);
        Files.writeString(info, Files.readString(tmp.resolve("dynamic").resolve(ExportInfo.FILE)).replaceAll("\\s*\"logitsFrom\" : \"[a-z_]+\",", ""));
        assertEquals(null, ExportInfo.read(older).logitsFrom());
        try (CausalLm lm = OnnxLm.open(older, 1, null, null, LogitRows.LAST); DecodeSession s = lm.start(4)) {
            assertEquals(LogitRows.ALL, lm.logitRows());
            assertEquals(3, s.appendAll(new int[]{5, 6, 7}).length);
        }
    }
}
