package dev.hexforge.compile;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.hexforge.checkpoint.Checkpoint;
import dev.hexforge.generate.CausalLm;
import dev.hexforge.generate.Generator;
import dev.hexforge.onnx.export.DecoderExporter;
import dev.hexforge.onnx.export.ExportInfo;
import dev.hexforge.onnx.export.ExportOptions;
import dev.hexforge.onnx.export.GenieIo;
import dev.hexforge.onnx.export.Variant;
import dev.hexforge.compile.genie.GenieBundle;
import dev.hexforge.compile.genie.GenieConfig;
import dev.hexforge.compile.genie.GenieConfigRules;
import dev.hexforge.compile.genie.HtpExtConfig;
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
        sdk = QnnToolStandIn.install(tmp.resolve("qairt-2.40.0-standin"));
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
        assertTrue(manifest.path("compiledOnDevice").asText().startsWith("at the first load"), "QDQ graphs compile on the phone");
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

    /**
     * An export with quantized inputs and outputs, split into parts: the bundle's manifest gives every quantized
     * input's and output's encoding (the hidden states between parts uint16, the cache uint8), the pipeline generates
     * what the float-IO export does, and the QNN SDK targets refuse it with the fix.
     */
    @Test
    void quantizedInputsAndOutputsAreListedInTheManifestAndRunAsTheFloatIoExport() throws Exception {
        Path split = tmp.resolve("split-io-export");
        ActivationEncodings io = new ActivationEncodings(activations.settings().withQuantizedIo(true), activations.rangeMethod(),
                activations.calibrationSequences(), activations.noisiest(), activations.tensors());
        try (Checkpoint ckpt = Checkpoint.open(Fixtures.qwen2Tiny())) {
            DecoderExporter.export(ckpt, split, new ExportOptions(dev.hexforge.onnx.export.Variant.STATIC, 64, 256, 17, 700_000),
                    new QdqFormat(qm), io, Progress.NONE);
        }
        ObjectNode manifest = OrtQnnBundler.build(split, tmp.resolve("split-io-bundle"), CompileOptions.of("SM8650", 0));
        assertTrue(manifest.path("quantizedIo").asBoolean());
        JsonNode first = manifest.path("graphs").path("prompt.0").path("quantizedIo");
        String hidden = manifest.path("graphs").path("prompt.0").path("outputs").fieldNames().next();
        assertTrue(hidden.startsWith("hidden_states."), manifest.toString());
        assertEquals("uint16", first.path(hidden).path("type").asText(), first.toString());
        assertEquals("uint16", first.path("attention_mask").path("type").asText(), first.toString());
        assertEquals("uint8", first.path("past_key_values.0.key").path("type").asText(), first.toString());
        assertEquals(activations.tensors().get(hidden).scale(), first.path(hidden).path("scale").floatValue());
        try (CausalLm lm = OnnxLm.open(tmp.resolve("split-io-bundle"), 1); CausalLm whole = OnnxLm.open(staticExport, 1)) {
            int[] ids = Fixtures.ints(Fixtures.json(Fixtures.reference("reference.json")).path("prompts").get(0).path("input_ids"));
            assertArrayEquals(Generator.generate(whole, ids, Generator.Options.greedy(12), null),
                    Generator.generate(lm, ids, Generator.Options.greedy(12), null));
        }
        CompileException sdkTarget = assertThrows(CompileException.class,
                () -> new QnnSdk(sdk).build(QnnSdk.CONTEXT_BINARY, split, tmp.resolve("no-io"), CompileOptions.of("SM8650", 0)));
        assertTrue(sdkTarget.getMessage().contains("quantized inputs and outputs") && sdkTarget.hint().contains("ort-qnn"),
                sdkTarget.getMessage());
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

    /**
     * A Genie bundle from the Genie export of the w8a16 model (a 500 kB per-graph limit standing in for 2 GB, so the
     * layers spread over parts): one context binary per part holding its prompt and token graphs with weight sharing,
     * made by one generator call each; Genie's config as its loader takes it, naming exactly the binaries made; the
     * metadata with every graph's IO; the device memory counting each part's weights once.
     */
    @Test
    void aGenieBundleHoldsOneWeightSharedContextPerPartAndTheConfigGenieLoads() throws Exception {
        Path export = tmp.resolve("genie-export");
        try (Checkpoint ckpt = Checkpoint.open(Fixtures.qwen2Tiny())) {
            DecoderExporter.export(ckpt, export, new ExportOptions(Variant.GENIE, 64, 512, 17, 500_000), new QdqFormat(qm), activations,
                    Progress.NONE);
            AimetEncodings.write(qm, List.of(), GenieIo.encodings(activations, ckpt.config().numLayers()), export.resolve(AimetEncodings.FILE));
        }
        Files.deleteIfExists(sdk.resolve("calls.log"));
        Path out = tmp.resolve("genie-bundle");
        ObjectNode manifest = new QnnSdk(sdk).build(QnnSdk.GENIE, export, out, CompileOptions.of("SM8650", 0,
                new GenieConfig.Sampler(7, 0.7, 20, 0.9)));
        int n = ExportInfo.read(export).roles("prompt").size();
        assertTrue(n >= 3, "embedding, layers, head: " + n);

        ObjectMapper json = new ObjectMapper();
        JsonNode config = json.readTree(out.resolve(GenieConfig.FILE).toFile());
        assertEquals(List.of(), GenieConfigRules.check(config), "Genie's loader takes it");
        List<String> bins = new java.util.ArrayList<>();
        config.at("/dialog/engine/model/binary/ctx-bins").forEach(b -> bins.add(b.asText()));
        List<String> made;
        try (var files = Files.list(out)) {
            made = files.map(f -> f.getFileName().toString()).filter(f -> f.endsWith(".bin")).sorted().toList();
        }
        assertEquals(made, bins.stream().sorted().toList(), "ctx-bins are the binaries made");
        assertEquals("qwen2_tiny_part_1_of_" + n + ".bin", bins.get(0));
        assertEquals(512, config.at("/dialog/context/size").asInt());
        assertEquals(0.7, config.at("/dialog/sampler/temp").asDouble());
        assertEquals(16, config.at("/dialog/engine/model/positional-encoding/rope-dim").asInt());
        assertTrue(!config.at("/dialog/engine/backend/QnnHtp").has("pos-id-dim"));
        for (int p = 0; p < n; p++) {
            JsonNode bin = json.readTree(out.resolve(bins.get(p)).toFile());
            assertEquals(List.of("prompt_ar64_cl512_" + (p + 1) + "_of_" + n, "token_ar1_cl512_" + (p + 1) + "_of_" + n),
                    List.of(bin.path("graphs").get(0).asText(), bin.path("graphs").get(1).asText()), bin.toString());
            assertTrue(bin.path("weightSharing").asBoolean() && bin.path("socModel").asInt() == 57, bin.toString());
        }
        List<String> generatorCalls = Files.readAllLines(sdk.resolve("calls.log")).stream()
                .filter(l -> l.startsWith("qnn-context-binary-generator ")).toList();
        assertEquals(n, generatorCalls.size(), "one generator call per part");
        assertTrue(generatorCalls.stream().allMatch(l -> l.matches(".*--model \\S+\\.so,\\S+\\.so .*")), generatorCalls.toString());
        JsonNode ext = json.readTree(out.resolve(HtpExtConfig.FILE).toFile());
        assertEquals(57, ext.at("/devices/0/soc_model").asInt());
        assertEquals("v75", ext.at("/devices/0/dsp_arch").asText());
        assertTrue(ext.at("/context/weight_sharing_enabled").asBoolean());
        assertTrue(Files.isRegularFile(out.resolve("tokenizer.json")));

        JsonNode meta = json.readTree(out.resolve(GenieBundle.METADATA).toFile());
        assertEquals("2.40.0.251030", meta.at("/tools/qairt").asText());
        JsonNode inputs = meta.path("graphs").path("prompt_ar64_cl512_2_of_" + n).path("inputs");
        JsonNode pastKey = null;
        for (JsonNode t : inputs) {
            if (t.path("name").asText().equals("past_key_0_in")) {
                pastKey = t;
            }
        }
        assertEquals("[2,1,32,448]", pastKey.path("shape").toString());
        assertEquals("uint8", pastKey.path("dtype").asText(), "the 8-bit cache");
        assertEquals(-activations.tensors().get("present.0.key").zeroPoint(), pastKey.path("offset").asInt());
        assertEquals("int32", meta.path("graphs").path("prompt_ar64_cl512_1_of_" + n).path("inputs").get(0).path("dtype").asText());

        JsonNode memory = manifest.path("deviceMemory");
        long prompt = 0;
        long all = 0;
        for (var g : manifest.path("graphs").properties()) {
            all += g.getValue().path("weightBytes").asLong();
            prompt += g.getKey().startsWith("prompt") ? g.getValue().path("weightBytes").asLong() : 0;
        }
        assertEquals(prompt, memory.path("weightBytes").asLong(), "each part's weights once");
        assertEquals(all, memory.path("weightBytesUnshared").asLong());
        assertEquals(2 * prompt, all);
        assertEquals(2L * 4 * 2 * 512 * 32, memory.path("kvCacheBytes").asLong(), "4 layers, K and V, 2 heads, 512 positions, 32 dims, 8 bits");
        assertEquals(n, manifest.path("parts").size());
    }

    @Test
    void aGenieBundleIsRefusedBeforeAnyToolRunsForTheWrongLayoutOrAnUnknownSocModel() throws Exception {
        QnnSdk tools = new QnnSdk(sdk);
        CompileException layout = assertThrows(CompileException.class,
                () -> tools.build(QnnSdk.GENIE, staticExport, tmp.resolve("g1"), CompileOptions.of("SM8650", 0)));
        assertTrue(layout.getMessage().contains("needs the genie export") && layout.hint().contains("export.variant: genie"),
                layout.getMessage());
        Path export = tmp.resolve("genie-export-2");
        try (Checkpoint ckpt = Checkpoint.open(Fixtures.qwen2Tiny())) {
            DecoderExporter.export(ckpt, export, new ExportOptions(Variant.GENIE, 64, 512, 17, 2_000_000), new QdqFormat(qm),
                    activations, Progress.NONE);
            AimetEncodings.write(qm, List.of(), GenieIo.encodings(activations, 4), export.resolve(AimetEncodings.FILE));
        }
        CompileException ctx = assertThrows(CompileException.class,
                () -> tools.build(QnnSdk.CONTEXT_BINARY, export, tmp.resolve("g2"), CompileOptions.of("SM8650", 0)));
        assertTrue(ctx.hint().contains("export.variant: static"), ctx.getMessage());
        CompileException soc = assertThrows(CompileException.class,
                () -> tools.build(QnnSdk.GENIE, export, tmp.resolve("g3"), CompileOptions.of("SM9999", 80)));
        assertTrue(soc.getMessage().contains("SoC model id"), soc.getMessage());
        for (String dir : List.of("g1", "g2", "g3")) {
            assertTrue(!Files.exists(tmp.resolve(dir + ".work")) && !Files.exists(tmp.resolve(dir)), dir + ": no tool ran");
        }
    }

    @Test
    void theStandInGeneratorRefusesTwoGraphsInOneContextWithoutWeightSharing() throws Exception {
        Path bin = sdk.resolve("bin/x86_64-linux-clang");
        Path libs = Files.createDirectories(tmp.resolve("two-libs"));
        Files.writeString(libs.resolve("liba.so"), "ELF x86_64-linux-clang\n");
        Files.writeString(libs.resolve("libb.so"), "ELF x86_64-linux-clang\n");
        Files.writeString(tmp.resolve("ext2.json"), "{\"devices\": [{\"dsp_arch\": \"v75\"}], \"graphs\": [{\"graph_names\": [\"a\", \"b\"]}]}");
        Files.writeString(tmp.resolve("htp2.json"), "{\"backend_extensions\": {\"config_file_path\": \"" + tmp.resolve("ext2.json") + "\"}}");
        String[] r = runTool(List.of(bin.resolve("qnn-context-binary-generator").toString(), "--backend",
                sdk.resolve("lib/x86_64-linux-clang/libQnnHtp.so").toString(), "--model", libs.resolve("liba.so") + "," + libs.resolve("libb.so"),
                "--binary_file", "ab", "--output_dir", tmp.resolve("ab").toString(), "--config_file", tmp.resolve("htp2.json").toString()));
        assertEquals("1", r[0], r[1]);
        assertTrue(r[1].contains("weight_sharing_enabled"), r[1]);
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
        // as Genie reports a bundle it cannot load on a phone
        QnnTriage.Diagnosis device = QnnTriage.explain("[ERROR] \"Could not create context from binary. Error: QnnContext_createFromBinary "
                + "failed with error 5005\"").orElseThrow();
        assertEquals(dev.hexforge.contracts.ErrorCode.QNN_CONTEXT_MISMATCH, device.code());
        assertTrue(device.fix().contains("compile.soc"), device.fix());
        QnnTriage.Diagnosis version = QnnTriage.explain("Failed to create dialog: error 5000").orElseThrow();
        assertTrue(version.fix().contains("at least as new") && version.fix().contains("metadata.json"), version.fix());
        QnnTriage.Diagnosis vtcm = QnnTriage.explain("<E> Failed to allocate VTCM of 8388608 bytes for graph prompt_ar128_cl4096_2_of_4")
                .orElseThrow();
        assertEquals(dev.hexforge.contracts.ErrorCode.QNN_OUT_OF_MEMORY, vtcm.code());
        assertTrue(vtcm.fix().contains("export.seq 64"), vtcm.fix());
        assertTrue(QnnTriage.explain("graph config: vtcm_mb 8, O 3").isEmpty(), "a setting is no failure");
        CompileException none = assertThrows(CompileException.class, () -> new QnnSdk(tmp.resolve("nothing")));
        assertTrue(none.hint().contains("QNN_SDK_ROOT"), none.hint());
    }
}
