package dev.hexforge.compile;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.hexforge.checkpoint.Checkpoint;
import dev.hexforge.generate.CausalLm;
import dev.hexforge.generate.Generator;
import dev.hexforge.onnx.export.DecoderExporter;
import dev.hexforge.onnx.export.ExportOptions;
import dev.hexforge.onnx.qdq.ActivationEncodings;
import dev.hexforge.onnx.qdq.Activations;
import dev.hexforge.onnx.runtime.OnnxLm;
import dev.hexforge.progress.Progress;
import dev.hexforge.quant.AimetEncodings;
import dev.hexforge.quant.QuantSpec;
import dev.hexforge.quant.QuantizedModel;
import dev.hexforge.quant.calib.ActivationCalibration;
import dev.hexforge.quant.calib.CalibrationSet;
import dev.hexforge.quant.onnx.QdqFormat;
import dev.hexforge.testing.Fixtures;
import dev.hexforge.tokenizer.Tokenizer;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class CompileTest {
    @TempDir
    static Path tmp;
    static Path staticExport;
    static Path weightOnlyExport;
    static Path dynamicExport;
    static ActivationEncodings activations;
    static QuantizedModel qm;
    static Path sdk;

    @BeforeAll
    static void exportAndSdk() throws Exception {
        try (Checkpoint ckpt = Checkpoint.open(Fixtures.qwen2Tiny())) {
            qm = QuantizedModel.rtn(ckpt, QuantSpec.int8PerChannel(), List.of()).withEmbeddings(ckpt, QuantSpec.int8PerChannel());
            List<int[]> calibration;
            try (Tokenizer tok = Tokenizer.load(Fixtures.qwen2Tiny())) {
                calibration = CalibrationSet.load(Fixtures.root().resolve("calib.jsonl"), tok, 32, 256, 0).sequences();
            }
            activations = ActivationCalibration.run(ckpt, new QdqFormat(qm), calibration, 8, new Activations(16, 8),
                    tmp.resolve("calibration"), Progress.NONE);
            staticExport = tmp.resolve("static");
            DecoderExporter.export(ckpt, staticExport, ExportOptions.staticShapes(64, 256), new QdqFormat(qm), activations, Progress.NONE);
            AimetEncodings.write(qm, List.of(), activations, staticExport.resolve(AimetEncodings.FILE));
            weightOnlyExport = tmp.resolve("static-w8");
            DecoderExporter.export(ckpt, weightOnlyExport, ExportOptions.staticShapes(64, 256), new QdqFormat(qm), Progress.NONE);
            AimetEncodings.write(qm, List.of(), null, weightOnlyExport.resolve(AimetEncodings.FILE));
            dynamicExport = tmp.resolve("dynamic");
            DecoderExporter.export(ckpt, dynamicExport, ExportOptions.dynamic(), new QdqFormat(qm), Progress.NONE);
        }
        sdk = tmp.resolve("qairt-2.40.0-standin");
        Path bin = Files.createDirectories(sdk.resolve("bin/x86_64-linux-clang"));
        Files.createDirectories(sdk.resolve("lib/x86_64-linux-clang"));
        Files.writeString(sdk.resolve("lib/x86_64-linux-clang/libQnnHtp.so"), "stand-in backend");
        Files.writeString(sdk.resolve("sdk.yaml"), "name: qairt stand-in\nversion: 2.40.0.251030\n");
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        for (String tool : List.of("qnn-onnx-converter", "qnn-model-lib-generator", "qnn-context-binary-generator")) {
            Path script = bin.resolve(tool);
            Files.writeString(script, "#!/bin/sh\n# TEST DOUBLE of the QNN SDK's " + tool + " (see QnnToolStandIn)\nexec '" + java
                    + "' -cp '" + System.getProperty("java.class.path") + "' " + QnnToolStandIn.class.getName() + " '" + sdk + "' "
                    + tool + " \"$@\"\n");
            Files.setPosixFilePermissions(script, PosixFilePermissions.fromString("rwxr-xr-x"));
        }
    }

    @Test
    void theOrtQnnBundleRunsInOnnxRuntimeAndMatchesTheQuantizedReference() throws Exception {
        Path out = tmp.resolve("bundle");
        ObjectNode manifest = OrtQnnBundler.build(staticExport, out, CompileOptions.of("SM8650", 0));
        assertEquals("ort-qnn", manifest.path("target").asText());
        assertEquals(75, manifest.path("htpArch").asInt());
        assertEquals(256, manifest.path("contextLength").asInt());
        assertTrue(manifest.path("graphs").has("prompt") && manifest.path("graphs").has("token"), manifest.toString());
        assertTrue(manifest.path("tools").path("onnxRuntime").asText().matches("\\d+\\.\\d+\\.\\d+"), manifest.toString());
        JsonNode genai = new ObjectMapper().readTree(out.resolve(OrtQnnBundler.GENAI_CONFIG).toFile());
        JsonNode qnn = genai.at("/model/decoder/session_options/provider_options/0/qnn");
        assertEquals("libQnnHtp.so", qnn.path("backend_path").asText());
        assertEquals("SM8650", qnn.path("soc_model").asText());
        assertEquals("75", qnn.path("htp_arch").asText());
        assertEquals("1", genai.at("/model/decoder/session_options/config_entries/session.disable_cpu_ep_fallback").asText());
        assertEquals(2, genai.at("/model/decoder/pipeline").size());
        assertTrue(Files.isRegularFile(out.resolve("tokenizer.json")));

        assertEquals("w8a16", manifest.path("precision").asText());
        // the bundle runs the fully quantized graphs as exported
        try (CausalLm lm = OnnxLm.open(out, 1); CausalLm exported = OnnxLm.open(staticExport, 1)) {
            for (JsonNode p : Fixtures.json(Fixtures.reference("reference.json")).path("prompts")) {
                int[] ids = Fixtures.ints(p.path("input_ids"));
                assertArrayEquals(Generator.generate(exported, ids, Generator.Options.greedy(12), null),
                        Generator.generate(lm, ids, Generator.Options.greedy(12), null), p.path("name").asText());
            }
        }
    }

    @Test
    void aModelSplitIntoPartsBecomesADecoderPipelineAndOneContextPerPart() throws Exception {
        Path split = tmp.resolve("split-export");
        try (Checkpoint ckpt = Checkpoint.open(Fixtures.qwen2Tiny())) {
            DecoderExporter.export(ckpt, split, new ExportOptions(dev.hexforge.onnx.export.Variant.STATIC, 64, 256, 17, 700_000),
                    new QdqFormat(qm), activations, Progress.NONE);
            AimetEncodings.write(qm, List.of(), activations, split.resolve(AimetEncodings.FILE));
        }
        Path out = tmp.resolve("split-bundle");
        ObjectNode manifest = OrtQnnBundler.build(split, out, CompileOptions.of("SM8650", 0));
        List<String> roles = new java.util.ArrayList<>();
        manifest.path("graphs").fieldNames().forEachRemaining(roles::add);
        assertTrue(roles.size() >= 4 && roles.get(0).equals("prompt.0") && roles.contains("token.0"), roles.toString());
        JsonNode pipeline = new ObjectMapper().readTree(out.resolve(OrtQnnBundler.GENAI_CONFIG).toFile()).at("/model/decoder/pipeline");
        assertEquals(roles.size(), pipeline.size());
        JsonNode first = pipeline.get(0).path("prompt.0");
        JsonNode second = pipeline.get(1).path("prompt.1");
        assertTrue(first.path("run_on_prompt").asBoolean() && !first.path("run_on_token_gen").asBoolean(), first.toString());
        assertTrue(first.path("outputs").toString().contains("hidden_states.") && second.path("inputs").toString().contains(
                first.path("outputs").get(0).asText()), "a part feeds its hidden states to the next: " + pipeline);
        JsonNode lastToken = pipeline.get(pipeline.size() - 1).elements().next();
        assertTrue(lastToken.path("run_on_token_gen").asBoolean() && lastToken.path("outputs").toString().contains("logits"), lastToken.toString());

        // split anywhere, the graphs keep their tensor names and so their encodings: the pipeline runs as the whole graph
        try (CausalLm lm = OnnxLm.open(out, 1); CausalLm whole = OnnxLm.open(staticExport, 1)) {
            for (JsonNode p : Fixtures.json(Fixtures.reference("reference.json")).path("prompts")) {
                int[] ids = Fixtures.ints(p.path("input_ids"));
                if (ids.length + 12 <= 256) {
                    assertArrayEquals(Generator.generate(whole, ids, Generator.Options.greedy(12), null),
                            Generator.generate(lm, ids, Generator.Options.greedy(12), null), p.path("name").asText());
                }
            }
        }

        ObjectNode ctx = new QnnSdk(sdk).build(QnnSdk.CONTEXT_BINARY, split, tmp.resolve("split-ctx"), CompileOptions.of("SM8650", 0));
        assertEquals("prompt_0.bin", ctx.path("graphs").path("prompt.0").path("file").asText());
        assertTrue(Files.isRegularFile(tmp.resolve("split-ctx").resolve("token_1.bin")));
    }

    @Test
    void whatTheNpuCannotRunIsRefusedWithTheFix() {
        CompileException dynamic = assertThrows(CompileException.class,
                () -> OrtQnnBundler.build(dynamicExport, tmp.resolve("no"), CompileOptions.of("SM8650", 0)));
        assertTrue(dynamic.getMessage().contains("static export") && dynamic.hint().contains("export.variant: static"), dynamic.getMessage());
        CompileException soc = assertThrows(CompileException.class,
                () -> OrtQnnBundler.build(staticExport, tmp.resolve("no2"), CompileOptions.of("SM9999", 0)));
        assertTrue(soc.getMessage().contains("unknown soc") && soc.hint().contains("SM8650"), soc.getMessage());
        assertEquals(80, Soc.resolve("SM9999", 80).htpArch(), "an unknown SoC with its architecture given");
        assertThrows(CompileException.class, () -> Soc.resolve("SM8650", 73));
    }

    @Test
    void contextBinariesAndModelLibrariesAreBuiltWithTheSdkToolsUnderTheirContract() throws Exception {
        QnnSdk tools = new QnnSdk(sdk);
        assertEquals("2.40.0.251030", tools.version());
        Path ctx = tmp.resolve("ctx");
        ObjectNode m = tools.build(QnnSdk.CONTEXT_BINARY, staticExport, ctx, CompileOptions.of("SM8650", 0));
        assertTrue(Files.isRegularFile(ctx.resolve("prompt.bin")) && Files.isRegularFile(ctx.resolve("token.bin")));
        assertEquals("2.40.0.251030", m.path("qnnSdk").asText());
        assertEquals("prompt.bin", m.path("graphs").path("prompt").path("file").asText());
        Path libs = tmp.resolve("libs");
        tools.build(QnnSdk.MODEL_LIB, staticExport, libs, CompileOptions.of("SM8550", 0));
        assertTrue(Files.readString(libs.resolve("libprompt.so")).contains("aarch64-android"), "built for the phone");
        assertTrue(Files.isRegularFile(libs.resolve("tokenizer.json")));
    }

    @Test
    void aWeightOnlyExportIsRefusedBeforeAnyToolRunsAndTheToolsRefuseFloatActivationsAsTheRealOnesWould() throws Exception {
        QnnSdk tools = new QnnSdk(sdk);
        CompileException e = assertThrows(CompileException.class,
                () -> tools.build(QnnSdk.CONTEXT_BINARY, weightOnlyExport, tmp.resolve("w8-ctx"), CompileOptions.of("SM8650", 0)));
        assertTrue(e.getMessage().contains("activations are float (w8)") && e.hint().contains("quantize.activations: 16"), e.getMessage());
        assertTrue(!Files.exists(tmp.resolve("w8-ctx.work")), "no tool ran");

        // the stand-ins themselves, run as the SDK's tools on the weight-only graph
        Path bin = sdk.resolve("bin/x86_64-linux-clang");
        Path graph = weightOnlyExport.resolve("onnx/token.onnx");
        List<String> conv = new java.util.ArrayList<>(List.of(bin.resolve("qnn-onnx-converter").toString(), "--input_network",
                graph.toString(), "--output_path", tmp.resolve("w8.cpp").toString(), "--quantization_overrides",
                weightOnlyExport.resolve(AimetEncodings.FILE).toString(), "--act_bitwidth", "16", "--weights_bitwidth", "8"));
        for (GraphIo.Tensor t : GraphIo.read(graph).inputs()) {
            conv.addAll(List.of("--input_dim", t.name(), t.dimsArg()));
        }
        for (GraphIo.Tensor t : GraphIo.read(graph).outputs()) {
            conv.addAll(List.of("--out_node", t.name()));
        }
        String[] refused = runTool(conv);
        assertEquals("1", refused[0], refused[1]);
        assertTrue(refused[1].contains("No quantization encodings for activation tensor"), refused[1]);
        conv.add("--float_fallback");
        assertEquals("0", runTool(conv)[0]);
        assertEquals("0", runTool(List.of(bin.resolve("qnn-model-lib-generator").toString(), "-c", tmp.resolve("w8.cpp").toString(),
                "-b", tmp.resolve("w8.bin").toString(), "-t", "x86_64-linux-clang", "-o", tmp.resolve("w8-lib").toString()))[0]);
        Path htpConfig = tmp.resolve("htp.json");
        Files.writeString(tmp.resolve("ext.json"), "{\"devices\": [{\"dsp_arch\": \"v75\"}], \"graphs\": [{\"graph_names\": [\"w8\"]}]}");
        Files.writeString(htpConfig, "{\"backend_extensions\": {\"config_file_path\": \"" + tmp.resolve("ext.json") + "\"}}");
        String[] htp = runTool(List.of(bin.resolve("qnn-context-binary-generator").toString(), "--backend",
                sdk.resolve("lib/x86_64-linux-clang/libQnnHtp.so").toString(), "--model",
                tmp.resolve("w8-lib/x86_64-linux-clang/libw8.so").toString(), "--binary_file", "w8", "--output_dir",
                tmp.resolve("w8-out").toString(), "--config_file", htpConfig.toString()));
        assertEquals("1", htp[0], htp[1]);
        assertTrue(htp[1].contains("HTP does not support float32 activations"), htp[1]);
    }

    private static String[] runTool(List<String> command) throws Exception {
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        return new String[]{Integer.toString(p.waitFor()), out};
    }

    @Test
    void aFailingToolIsTriagedToTheNodeAndTheFix() throws Exception {
        QnnSdk tools = new QnnSdk(sdk);
        Path fail = sdk.resolve("standin-fail.txt");
        try {
            Files.writeString(fail, "unsupported-op /model/layers.0/mlp/act/Erf Erf");
            CompileException e = assertThrows(CompileException.class,
                    () -> tools.build(QnnSdk.CONTEXT_BINARY, staticExport, tmp.resolve("f1"), CompileOptions.of("SM8650", 0)));
            assertTrue(e.getMessage().contains("node '/model/layers.0/mlp/act/Erf' (op Erf) is not supported"), e.getMessage());
            assertTrue(e.hint().contains("tanh approximation"), e.hint());
            assertEquals(dev.hexforge.contracts.ErrorCode.QNN_UNSUPPORTED_OP, e.code());
            Files.writeString(fail, "dynamic attention_mask");
            e = assertThrows(CompileException.class,
                    () -> tools.build(QnnSdk.CONTEXT_BINARY, staticExport, tmp.resolve("f2"), CompileOptions.of("SM8650", 0)));
            assertTrue(e.hint().contains("--input_dim attention_mask"), e.hint());
            Files.writeString(fail, "code 1002");
            e = assertThrows(CompileException.class,
                    () -> tools.build(QnnSdk.CONTEXT_BINARY, staticExport, tmp.resolve("f3"), CompileOptions.of("SM8650", 0)));
            assertEquals(dev.hexforge.contracts.ErrorCode.QNN_OUT_OF_MEMORY, e.code());
            assertTrue(e.hint().contains("split"), e.hint());
        } finally {
            Files.deleteIfExists(fail);
        }
        assertEquals(dev.hexforge.contracts.ErrorCode.QNN_CONTEXT_MISMATCH, QnnTriage.explain("QnnContext_createFromBinary failed: error 5000").orElseThrow().code());
        assertTrue(QnnTriage.explain("all good").isEmpty());
        CompileException none = assertThrows(CompileException.class, () -> new QnnSdk(tmp.resolve("nothing")));
        assertTrue(none.hint().contains("QNN_SDK_ROOT"), none.hint());
    }
}
