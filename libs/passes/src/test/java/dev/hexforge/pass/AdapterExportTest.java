package dev.hexforge.pass;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.hexforge.checkpoint.ModelConfig;
import dev.hexforge.compile.CompileOptions;
import dev.hexforge.checkpoint.NonFinite;
import dev.hexforge.contracts.HexforgeException;
import dev.hexforge.eval.Perplexity;
import dev.hexforge.forward.DecoderWeights.LowRankDelta;
import dev.hexforge.generate.CausalLm;
import dev.hexforge.generate.Generator;
import dev.hexforge.generate.LogitRows;
import dev.hexforge.lora.LoraAdapter;
import dev.hexforge.lora.LoraException;
import dev.hexforge.onnx.export.ExportInfo;
import dev.hexforge.onnx.export.ExportOptions;
import dev.hexforge.onnx.export.Variant;
import dev.hexforge.onnx.lora.AdapterFileException;
import dev.hexforge.onnx.lora.OnnxAdapterFile;
import dev.hexforge.onnx.qdq.Activations;
import dev.hexforge.onnx.qnn.Precision;
import dev.hexforge.onnx.qnn.QnnPreflight;
import dev.hexforge.onnx.runtime.OnnxCausalLm;
import dev.hexforge.onnx.runtime.OnnxLm;
import dev.hexforge.onnx.runtime.PartwisePrompt;
import dev.hexforge.progress.Progress;
import dev.hexforge.quant.QuantSpec;
import dev.hexforge.quant.QuantizeOptions;
import dev.hexforge.quant.QuantizePipeline;
import dev.hexforge.testing.Fixtures;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * qwen2-tiny exported with the LoRA task's reference adapter beside it (not merged), run through ONNX Runtime's
 * adapters: with the adapter it is the PyTorch merged model of {@code fixtures/lora-task/merged_reference}, without it
 * the base model of {@code qwen2-tiny/reference}; the base bytes do not depend on the adapters.
 */
class AdapterExportTest {
    private static final ObjectMapper JSON = new ObjectMapper();
    @TempDir
    static Path tmp;
    static Path adapter;
    /** The reference adapter with its B halved: another adapter of the same rank and modules. */
    static Path half;

    @BeforeAll
    static void adapters() {
        adapter = Fixtures.root().resolve("lora-task/reference_adapter");
        ModelConfig c = ModelConfig.read(Fixtures.qwen2Tiny());
        LoraAdapter ref = LoraAdapter.read(adapter, c);
        Map<String, LowRankDelta> halved = new LinkedHashMap<>();
        ref.deltas().forEach((k, d) -> {
            float[] b = d.b().clone();
            for (int i = 0; i < b.length; i++) {
                b[i] *= 0.5f;
            }
            halved.put(k, new LowRankDelta(d.a(), b, d.rank(), d.scale()));
        });
        half = tmp.resolve("half-adapter");
        new LoraAdapter(ref.config(), halved).write(half);
    }

    private static ExportOptions options(Variant v) {
        return v == Variant.DYNAMIC ? ExportOptions.dynamic() : ExportOptions.staticShapes(128, 512);
    }

    private static Path export(Variant v, String name, Map<String, Path> adapters) {
        Path out = tmp.resolve(v.id() + "-" + name);
        if (!Files.exists(out)) {
            ExportPass.run(Fixtures.qwen2Tiny(), NonFinite.REFUSE,
                    new ExportPass.Options(options(v), ExportPass.Format.QDQ, 4, false).withAdapters(adapters), out, Progress.NONE);
        }
        return out;
    }

    private static Path withTask(Variant v) {
        return export(v, "task", Map.of("task", adapter));
    }

    private static double perplexity(Path dir, String adapterName, int[] ids) {
        if (PartwisePrompt.scores(ExportInfo.read(dir), 128)) {
            return PartwisePrompt.score(dir, ids, 2, adapterName).result().perplexity();
        }
        try (CausalLm lm = OnnxLm.open(dir, 2, null, null, LogitRows.ALL, adapterName)) {
            return Perplexity.evaluate(lm, ids, 128, null).perplexity();
        }
    }

    private static void assertGreedy(Path dir, String adapterName, Path referenceJson) {
        try (CausalLm lm = OnnxLm.open(dir, 2, null, null, LogitRows.ALL, adapterName)) {
            for (JsonNode p : Fixtures.json(referenceJson).path("prompts")) {
                int[] expected = Fixtures.ints(p.path("greedy_new_ids"));
                int exact = p.path("greedy_exact_prefix_len").asInt();
                int[] got = Generator.generate(lm, Fixtures.ints(p.path("input_ids")), Generator.Options.greedy(expected.length), null);
                assertArrayEquals(Arrays.copyOf(expected, exact), Arrays.copyOf(got, exact), dir.getFileName() + " "
                        + p.path("name").asText());
            }
        }
    }

    @ParameterizedTest
    @EnumSource(value = Variant.class, names = {"DYNAMIC", "STATIC"})
    void withItsAdapterTheExportIsTheMergedModel(Variant v) {
        Path dir = withTask(v);
        Path ref = Fixtures.root().resolve("lora-task/merged_reference");
        double expected = Fixtures.json(ref.resolve("perplexity.json")).path("results").path("float32").path("eval.txt")
                .path("perplexity").asDouble();
        int[] ids = Fixtures.ints(Fixtures.json(ref.resolve("eval_txt_ids.json")).path("ids"));
        double got = perplexity(dir, "task", ids);
        assertTrue(Math.abs(got / expected - 1) < 1e-3, v + ": perplexity " + got + ", merged reference " + expected);
        assertGreedy(dir, "task", ref.resolve("reference.json"));
        // the adapter by its file works the same as by its name
        assertEquals(got, perplexity(dir, dir.resolve("adapters/task.onnx_adapter").toString(), ids), 1e-9);
    }

    @ParameterizedTest
    @EnumSource(value = Variant.class, names = {"DYNAMIC", "STATIC"})
    void withoutAnAdapterTheExportIsTheBaseModel(Variant v) {
        Path dir = withTask(v);
        double expected = Fixtures.json(Fixtures.reference("perplexity.json")).path("results").path("float32").path("eval.txt")
                .path("perplexity").asDouble();
        double got = perplexity(dir, null, Fixtures.evalTxtIds());
        assertTrue(Math.abs(got / expected - 1) < 1e-3, v + ": perplexity " + got + ", base reference " + expected);
        assertGreedy(dir, null, Fixtures.reference("reference.json"));
    }

    @ParameterizedTest
    @EnumSource(value = Variant.class, names = {"DYNAMIC", "STATIC"})
    void theBaseBytesAreTheSameWhicheverAdaptersAreAdded(Variant v) throws IOException {
        Path plain = export(v, "plain", Map.of());
        Path task = withTask(v);
        Path other = export(v, "half", Map.of("half", half));
        Map<String, Path> both = new LinkedHashMap<>();
        both.put("task", adapter);
        both.put("half", half);
        Path two = export(v, "both", both);
        String weights = ExportInfo.read(plain).weightsFile();
        for (Path dir : List.of(task, other, two)) {
            assertArrayEquals(Files.readAllBytes(plain.resolve(weights)), Files.readAllBytes(dir.resolve(weights)), dir.toString());
            for (String graph : ExportInfo.read(task).graphs().values()) {
                assertArrayEquals(Files.readAllBytes(task.resolve(graph)), Files.readAllBytes(dir.resolve(graph)), dir + " " + graph);
            }
        }
        assertArrayEquals(Files.readAllBytes(task.resolve("adapters/task.onnx_adapter")),
                Files.readAllBytes(two.resolve("adapters/task.onnx_adapter")));
        assertFalse(Arrays.equals(Files.readAllBytes(task.resolve("adapters/task.onnx_adapter")),
                Files.readAllBytes(other.resolve("adapters/half.onnx_adapter"))));
        assertFalse(Files.exists(plain.resolve("adapters")));
        assertEquals(null, ExportInfo.read(plain).lora());
        assertEquals(Map.of("task", "adapters/task.onnx_adapter", "half", "adapters/half.onnx_adapter"),
                ExportInfo.read(two).lora().adapters());
        // each adapter runs as its own model on the one export
        int[] ids = Arrays.copyOf(Fixtures.evalTxtIds(), 1024);
        double halfPpl = perplexity(two, "half", ids);
        assertEquals(perplexity(other, "half", ids), halfPpl, 1e-9);
        assertTrue(Math.abs(perplexity(two, "task", ids) - halfPpl) > 1e-3);
    }

    @ParameterizedTest
    @EnumSource(value = Variant.class, names = {"DYNAMIC", "STATIC"})
    void anOpenModelSwitchesAdaptersBetweenSequences(Variant v) {
        Map<String, Path> both = new LinkedHashMap<>();
        both.put("task", adapter);
        both.put("half", half);
        Path dir = export(v, "both", both);
        int[] ids = Arrays.copyOf(Fixtures.evalTxtIds(), 512);
        Map<String, Double> alone = new LinkedHashMap<>();
        for (String a : Arrays.asList("task", "half", null)) {
            try (CausalLm lm = OnnxLm.open(dir, 1, null, null, LogitRows.ALL, a)) {
                alone.put(String.valueOf(a), Perplexity.evaluate(lm, ids, 128, null).perplexity());
            }
        }
        try (OnnxCausalLm lm = OnnxLm.open(dir, 1, null, null, LogitRows.ALL, null)) {
            for (String a : Arrays.asList("half", "task", null, "task")) {
                lm.useAdapter(a);
                assertEquals(alone.get(String.valueOf(a)), Perplexity.evaluate(lm, ids, 128, null).perplexity(), 1e-9, v + " " + a);
            }
            Path notOne = tmp.resolve("switch-not-one.onnx_adapter");
            assertThrows(AdapterFileException.class, () -> lm.useAdapter(Files.writeString(notOne, "x").toString()));
            // a refused adapter leaves the model as it was
            assertEquals(alone.get("task"), Perplexity.evaluate(lm, ids, 128, null).perplexity(), 1e-9);
        }
    }

    /**
     * w8a16 graphs with the task adapter, calibrated on the fine-tune's own data (the adapter's activations are
     * what the text it was trained for makes them): with the adapter within 1% of the float export's perplexity with
     * it (the merged model's), without it within 1% of the base's, every activation of the adapter's path quantized (NPU-ready by the
     * pre-flight). An export given adapters the quantize pass was not calibrated with is refused.
     */
    @Test
    void fullyQuantizedGraphsTakeTheAdaptersTheirActivationsWereCalibratedWith() throws IOException {
        Path calib = tmp.resolve("task-calib.jsonl");
        StringBuilder lines = new StringBuilder();
        JsonNode train = Fixtures.json(Fixtures.root().resolve("lora-task/train.json"));
        for (int i = 0; i < 200; i++) {
            JsonNode e = train.get(i);
            lines.append(JSON.createObjectNode().put("text", e.path("instruction").asText() + "\n" + e.path("input").asText()
                    + "\n" + e.path("output").asText())).append('\n');
        }
        Files.writeString(calib, lines);
        QuantizeOptions w8a16 = new QuantizeOptions("rtn", QuantSpec.int8PerChannel(), List.of(), QuantSpec.int8PerChannel(),
                new QuantizeOptions.Calibration(calib, 128, 512, 0), null, null, 128, 1024, 0.5, 0, null,
                Activations.parse(null, null, true));
        QuantizeOptions opt = QuantizePass.withAdapters(w8a16, Fixtures.qwen2Tiny(), Map.of("task", adapter));
        Path q = tmp.resolve("w8a16-task");
        QuantizePipeline.Result r = QuantizePass.run(Fixtures.qwen2Tiny(), NonFinite.REFUSE, opt, q, Progress.NONE);
        assertTrue(r.passed(), r.report().toString());
        Path dir = tmp.resolve("w8a16-task-export");
        ExportPass.run(r.checkpoint(), NonFinite.REFUSE, new ExportPass.Options(ExportOptions.staticShapes(128, 512),
                ExportPass.Format.QDQ, 4, false).withAdapters(Map.of("task", adapter)), dir, Progress.NONE);
        assertEquals("w8a16", ExportInfo.read(dir).precision());

        // against the float export with the same adapter (the merged model's perplexity, as the test above holds), on
        // the first 16 windows of the text
        int[] ids = Arrays.copyOf(Fixtures.evalTxtIds(), 16 * 128);
        Path floatExport = withTask(Variant.STATIC);
        double merged = perplexity(floatExport, "task", ids);
        double adapted = perplexity(dir, "task", ids);
        assertTrue(Math.abs(adapted / merged - 1) < 0.01, "w8a16 with the adapter: " + adapted + ", float " + merged);
        double base = perplexity(floatExport, null, ids);
        double without = perplexity(dir, null, ids);
        assertTrue(Math.abs(without / base - 1) < 0.01, "w8a16 without it: " + without + ", base " + base);
        for (String graph : ExportInfo.read(dir).graphs().values()) {
            QnnPreflight.Report pre = QnnPreflight.check(dir.resolve(graph), Precision.parse("w8a16"));
            assertTrue(pre.clean(), graph + ": " + pre.problems());
        }
        // the ort-qnn bundle carries the adapters and names them; on this CPU it runs as the export does
        CompilePass.Result bundle = CompilePass.run(dir, new CompilePass.Options("ort-qnn", CompileOptions.of("SM8650", 0), null),
                tmp.resolve("w8a16-task-bundle"));
        JsonNode manifest = JSON.readTree(bundle.bundle().resolve("manifest.json").toFile());
        assertEquals("adapters/task.onnx_adapter", manifest.at("/lora/adapters/task").asText(), manifest.toString());
        assertEquals(8, manifest.at("/lora/rank").asInt());
        assertEquals(adapted, perplexity(bundle.bundle(), "task", ids), 1e-9);

        // quantized without the adapter, its graphs have no encodings for the adapter's path: refused, nothing written
        QuantizePipeline.Result plain = QuantizePass.run(Fixtures.qwen2Tiny(), NonFinite.REFUSE, w8a16, tmp.resolve("w8a16-plain"),
                Progress.NONE);
        Path refused = tmp.resolve("w8a16-uncalibrated-adapter");
        String m = assertThrows(HexforgeException.class, () -> ExportPass.run(plain.checkpoint(), NonFinite.REFUSE,
                new ExportPass.Options(ExportOptions.staticShapes(128, 512), ExportPass.Format.QDQ, 4, false)
                        .withAdapters(Map.of("task", adapter)), refused, Progress.NONE)).getMessage();
        assertTrue(m.contains("calibrated without") && m.contains("--adapter"), m);
        assertFalse(Files.exists(refused));
    }

    @Test
    void anAdapterOfAnotherBaseIsRefusedNamingItAndNothingIsWritten() {
        ModelConfig c = ModelConfig.read(Fixtures.qwen2Tiny());
        LoraAdapter ref = LoraAdapter.read(adapter, c);
        Map<String, LowRankDelta> wider = new LinkedHashMap<>();
        ref.deltas().forEach((k, d) -> wider.put(k, new LowRankDelta(new float[d.rank() * (c.hiddenSize() * 2)], d.b(), d.rank(), d.scale())));
        Path other = tmp.resolve("wider-adapter");
        new LoraAdapter(ref.config(), wider).write(other);
        Path out = tmp.resolve("refused-other");
        String m = assertThrows(LoraException.class, () -> ExportPass.run(Fixtures.qwen2Tiny(), NonFinite.REFUSE,
                new ExportPass.Options(ExportOptions.dynamic(), ExportPass.Format.QDQ, 4, false)
                        .withAdapters(Map.of("wide", other)), out, Progress.NONE)).getMessage();
        assertTrue(m.contains("adapter 'wide'") && m.contains("[8, 256]") && m.contains("[8, 128]"), m);
        assertFalse(Files.exists(out));
    }

    @Test
    void adapterNamesAreFileNames() {
        for (String bad : List.of("../up", "", "a b", "x/y", "-lead", "a".repeat(65))) {
            Path out = tmp.resolve("refused-name");
            String m = assertThrows(LoraException.class, () -> ExportPass.run(Fixtures.qwen2Tiny(), NonFinite.REFUSE,
                    new ExportPass.Options(ExportOptions.dynamic(), ExportPass.Format.QDQ, 4, false)
                            .withAdapters(Map.of(bad, adapter)), out, Progress.NONE)).getMessage();
            assertTrue(m.contains("adapter name '" + bad + "'"), m);
            assertFalse(Files.exists(out));
        }
    }

    @Test
    void anAdapterFileThatDoesNotFitTheGraphsIsRefusedNamingWhy() throws IOException {
        Path dir = withTask(Variant.DYNAMIC);
        OnnxAdapterFile.Adapter task = OnnxAdapterFile.read(dir.resolve("adapters/task.onnx_adapter"));
        String first = task.parameters().get(0).name(); // layer 0's q_proj A, [8, 128]

        Path notOne = Files.writeString(tmp.resolve("not-one.onnx_adapter"), "{\"lora\": true}");
        assertRefused(dir, notOne, "not an ONNX Runtime adapter file");

        List<OnnxAdapterFile.Parameter> ranked = new ArrayList<>(task.parameters());
        ranked.set(0, OnnxAdapterFile.Parameter.ofFloats(first, new long[]{16, 128}, new float[16 * 128]));
        assertRefused(dir, write("rank16", ranked), "'" + first + "' is [16, 128] FLOAT but the graph takes [8, 128] FLOAT (LoRA rank 8)");

        List<OnnxAdapterFile.Parameter> missing = new ArrayList<>(task.parameters().subList(1, task.parameters().size()));
        assertRefused(dir, write("missing", missing), "no parameter '" + first + "'");

        List<OnnxAdapterFile.Parameter> extra = new ArrayList<>(task.parameters());
        extra.add(OnnxAdapterFile.Parameter.ofFloats("model.layers.0.mlp.up_proj.lora_A.weight", new long[]{8, 128}, new float[8 * 128]));
        assertRefused(dir, write("extra", extra), "'model.layers.0.mlp.up_proj.lora_A.weight' is no LoRA input");

        Path plain = export(Variant.DYNAMIC, "plain", Map.of());
        String m = assertThrows(AdapterFileException.class, () -> OnnxLm.open(plain, 1, null, null, LogitRows.ALL,
                dir.resolve("adapters/task.onnx_adapter").toString())).getMessage();
        assertTrue(m.contains("take no LoRA adapter"), m);
        m = assertThrows(AdapterFileException.class, () -> OnnxLm.open(dir, 1, null, null, LogitRows.ALL, "nosuch")).getMessage();
        assertTrue(m.contains("adapter 'nosuch' is neither one of the export's ([task])"), m);
    }

    private static Path write(String name, List<OnnxAdapterFile.Parameter> params) throws IOException {
        Path f = tmp.resolve(name + ".onnx_adapter");
        OnnxAdapterFile.write(new OnnxAdapterFile.Adapter(1, 1, params), f);
        return f;
    }

    private static void assertRefused(Path dir, Path file, String expected) {
        HexforgeException e = assertThrows(HexforgeException.class,
                () -> OnnxLm.open(dir, 1, null, null, LogitRows.ALL, file.toString()).close());
        assertTrue(e instanceof AdapterFileException, e.toString());
        assertTrue(e.getMessage().contains(expected), e.getMessage());
        assertTrue(e.getMessage().contains(file.toString()), e.getMessage());
    }
}
