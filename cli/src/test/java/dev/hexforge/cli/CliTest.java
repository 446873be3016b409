package dev.hexforge.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.hexforge.safetensors.DType;
import dev.hexforge.safetensors.SafetensorsFile;
import dev.hexforge.safetensors.SafetensorsWriter;
import dev.hexforge.testing.Fixtures;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The CLI end to end: commands run in-process, --json output parsed as a script would. */
class CliTest {
    @TempDir
    static Path tmp;
    static final ObjectMapper JSON = new ObjectMapper();

    record Run(int exit, String out, String err) {
        JsonNode json() throws Exception {
            return JSON.readTree(out);
        }
    }

    static synchronized Run run(String... args) {
        PrintStream oldOut = System.out;
        PrintStream oldErr = System.err;
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        try {
            System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
            System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
            int code = Main.run(args);
            return new Run(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
        } finally {
            System.setOut(oldOut);
            System.setErr(oldErr);
        }
    }

    @BeforeAll
    static void export() {
        String model = Fixtures.qwen2Tiny().toString();
        assertEquals(0, run("export", "--model", model, "--out", tmp.resolve("dyn").toString(), "--variant", "dynamic", "--reference").exit());
        assertTrue(Files.isRegularFile(tmp.resolve("dyn").resolve("reference.json")), "asked for: the device reference");
        assertEquals(0, run("export", "--model", model, "--out", tmp.resolve("static").toString(), "--variant", "static",
                "--seq", "32", "--ctx", "256", "--json").exit());
    }

    @Test
    void socsListsEveryKnownSocWithItsHtpAndQnnModel() throws Exception {
        Run r = run("socs");
        assertEquals(0, r.exit(), r.err());
        String line = r.out().lines().filter(l -> l.startsWith("SM8850 ")).findFirst().orElseThrow();
        assertEquals(List.of("SM8850", "Snapdragon", "8", "Elite", "Gen", "5", "v81", "87", "8", "MB", "85.3", "GB/s"),
                List.of(line.trim().split(" +")), r.out());
        JsonNode all = run("socs", "--json").json();
        assertEquals(dev.hexforge.compile.Soc.KNOWN.size(), all.size());
        assertEquals(87, all.get(4).path("qnnSocModel").asInt(), all.toString());
        assertEquals(8, all.get(4).path("vtcmMb").asInt(), all.toString());
        Run unknown = run("compile", "--model", tmp.resolve("static").toString(), "--out", tmp.resolve("x").toString(),
                "--target", "ort-qnn", "--soc", "SM9999");
        assertTrue(unknown.exit() > 0 && unknown.err().contains("SM8850 (Snapdragon 8 Elite Gen 5)"), unknown.err());
    }

    @Test
    void generateJsonGivesTheReferenceContinuation() throws Exception {
        JsonNode ref = Fixtures.json(Fixtures.reference("reference.json")).path("prompts").get(0);
        String ids = Arrays.stream(Fixtures.ints(ref.path("input_ids"))).mapToObj(String::valueOf).collect(Collectors.joining(","));
        for (String dir : new String[]{"dyn", "static"}) {
            Run r = run("generate", "--model", tmp.resolve(dir).toString(), "--prompt-ids", ids, "--max-new", "16", "--greedy", "--json");
            assertEquals(0, r.exit(), r.err());
            int[] expected = Arrays.copyOf(Fixtures.ints(ref.path("greedy_new_ids")), 16);
            assertArrayEquals(expected, Fixtures.ints(r.json().path("ids")), dir);
            assertTrue(r.json().path("text").asText().startsWith("I'll be age"), r.out());
        }
    }

    @Test
    void aGenieExportRunsAsGenieRunsItAndGivesTheReferenceContinuation() throws Exception {
        Path genie = tmp.resolve("genie");
        Run e = run("export", "--model", Fixtures.qwen2Tiny().toString(), "--out", genie.toString(), "--variant", "genie", "--seq", "64",
                "--ctx", "512");
        assertEquals(0, e.exit(), e.err());
        assertTrue(Files.isRegularFile(genie.resolve("onnx/prompt_ar64_cl512_1_of_2.onnx")), "Genie's graph names");
        JsonNode ref = Fixtures.json(Fixtures.reference("reference.json")).path("prompts").get(0);
        String ids = Arrays.stream(Fixtures.ints(ref.path("input_ids"))).mapToObj(String::valueOf).collect(Collectors.joining(","));
        Run r = run("generate", "--model", genie.toString(), "--prompt-ids", ids, "--max-new", "16", "--greedy", "--json");
        assertEquals(0, r.exit(), r.err());
        assertArrayEquals(Arrays.copyOf(Fixtures.ints(ref.path("greedy_new_ids")), 16), Fixtures.ints(r.json().path("ids")));
        Run seq = run("export", "--model", Fixtures.qwen2Tiny().toString(), "--out", tmp.resolve("genie-32").toString(), "--variant",
                "genie", "--seq", "32");
        assertEquals(1, seq.exit());
        assertTrue(seq.err().contains("--seq: must be 64 or 128 for the genie variant"), "the spec's rule, naming the flag: " + seq.err());
        Run parts = run("export", "--model", Fixtures.qwen2Tiny().toString(), "--out", tmp.resolve("genie-8").toString(), "--variant",
                "genie", "--seq", "64", "--max-graph-mb", "8");
        assertEquals(1, parts.exit());
        assertTrue(parts.err().contains("--max-graph-mb: must be between 16 and 2048"), parts.err());
    }

    @Test
    void generateFromTextWithChatTemplateStopsAtEos() throws Exception {
        Run r = run("generate", "--model", tmp.resolve("dyn").toString(), "--prompt", "Which character is named in this line?",
                "--chat", "--max-new", "8", "--json");
        assertEquals(0, r.exit(), r.err());
        assertTrue(r.json().path("prompt_tokens").asInt() > 5);
        assertTrue(r.json().path("ids").size() <= 8);
    }

    @Test
    void checkQnnExitCodeTellsCleanFromNot() throws Exception {
        Run clean = run("check-qnn", tmp.resolve("static").toString(), "--json");
        assertEquals(0, clean.exit(), clean.out());
        assertTrue(clean.json().path("clean").asBoolean());
        assertEquals(2, clean.json().path("graphs").size());
        Run dynamic = run("check-qnn", tmp.resolve("dyn/onnx/model.onnx").toString());
        assertEquals(1, dynamic.exit());
        assertTrue(dynamic.out().contains("NOT READY") && dynamic.out().contains("Range"), dynamic.out());
    }

    @Test
    void evalPplJsonOnTheStaticExport() throws Exception {
        Path text = tmp.resolve("short.txt");
        Files.writeString(text, Files.readString(Fixtures.root().resolve("corpus/eval_en.txt")).substring(0, 6000));
        Run onnx = run("eval", "ppl", "--model", tmp.resolve("static").toString(), "--text", text.toString(), "--json");
        Run java = run("eval", "ppl", "--model", Fixtures.qwen2Tiny().toString(), "--text", text.toString(), "--json");
        assertEquals(0, onnx.exit(), onnx.err());
        assertEquals(java.json().path("scored_tokens").asLong(), onnx.json().path("scored_tokens").asLong());
        assertEquals(java.json().path("perplexity").asDouble(), onnx.json().path("perplexity").asDouble(),
                java.json().path("perplexity").asDouble() * 1e-4);
        assertEquals("java-reference", java.json().path("backend").asText());
    }

    @Test
    void nanWeightsAreRefusedUnlessAllowedAndANanPerplexityIsAnErrorNotAResult() throws Exception {
        // the tiny model with a final norm of NaN: every logit is NaN
        Path nan = Files.createDirectories(tmp.resolve("nan-model"));
        try (var files = Files.list(Fixtures.qwen2Tiny())) {
            for (Path f : files.filter(Files::isRegularFile).toList()) {
                Files.copy(f, nan.resolve(f.getFileName()));
            }
        }
        List<SafetensorsWriter.Entry> entries = new ArrayList<>();
        try (SafetensorsFile f = SafetensorsFile.open(Fixtures.qwen2Tiny().resolve("model.safetensors"))) {
            for (var t : f.tensors()) {
                float[] v = f.floats(t.name());
                if (t.name().equals("model.norm.weight")) {
                    Arrays.fill(v, Float.NaN);
                }
                entries.add(SafetensorsWriter.Entry.ofFloats(t.name(), t.shape(), v, DType.F32));
            }
        }
        SafetensorsWriter.write(nan.resolve("model.safetensors"), Map.of("format", "pt"), entries);

        Path refused = tmp.resolve("nan-export");
        Run r = run("export", "--model", nan.toString(), "--out", refused.toString(), "--variant", "dynamic");
        assertEquals(1, r.exit(), r.err());
        assertTrue(r.err().contains("NaN or Inf weights in 1 tensor(s): 'model.norm.weight' (")
                && r.err().contains("--allow-non-finite"), r.err());
        assertFalse(Files.exists(refused), "nothing is written");

        Path allowed = tmp.resolve("nan-export-allowed");
        Run a = run("export", "--model", nan.toString(), "--out", allowed.toString(), "--variant", "dynamic", "--allow-non-finite");
        assertEquals(0, a.exit(), a.err());
        assertTrue(a.err().contains("warning: going on, as allowNonFinite asks"), a.err());

        Path text = tmp.resolve("nan.txt");
        Files.writeString(text, Files.readString(Fixtures.root().resolve("corpus/eval_en.txt")).substring(0, 3000));
        Run e = run("eval", "ppl", "--model", allowed.toString(), "--text", text.toString(), "--json");
        assertEquals(1, e.exit(), e.out() + e.err());
        assertTrue(e.err().contains("MODEL_INVALID") && e.err().contains("perplexity NaN"), e.err());
        assertTrue(e.out().isEmpty(), "no result is printed: " + e.out());
    }

    @Test
    void anAdapterExportedBesideTheBaseRunsAsTheMergedModelAndWithoutItAsTheBase() throws Exception {
        Path dir = tmp.resolve("with-adapter");
        Path peft = Fixtures.root().resolve("lora-task/reference_adapter");
        Run e = run("export", "--model", Fixtures.qwen2Tiny().toString(), "--out", dir.toString(), "--variant", "dynamic",
                "--adapter", "task=" + peft, "--json");
        assertEquals(0, e.exit(), e.err());
        assertEquals("adapters/task.onnx_adapter", e.json().path("adapters").path("task").asText());
        Path text = tmp.resolve("adapter-eval.txt");
        Files.writeString(text, Files.readString(Fixtures.root().resolve("corpus/eval_en.txt")).substring(0, 6000));
        // the PyTorch-merged model (fixtures/lora-task/merged holds its weights; the tokenizer is the base's)
        Path mergedModel = Files.createDirectories(tmp.resolve("merged-model"));
        for (String f : List.of("config.json", "model.safetensors")) {
            Files.copy(Fixtures.root().resolve("lora-task/merged").resolve(f), mergedModel.resolve(f));
        }
        for (String f : List.of("tokenizer.json", "tokenizer_config.json", "vocab.json", "merges.txt", "generation_config.json")) {
            Files.copy(Fixtures.qwen2Tiny().resolve(f), mergedModel.resolve(f));
        }
        Run merged = run("eval", "ppl", "--model", mergedModel.toString(), "--text", text.toString(), "--json");
        Run adapted = run("eval", "ppl", "--model", dir.toString(), "--text", text.toString(), "--adapter", "task", "--json");
        Run base = run("eval", "ppl", "--model", dir.toString(), "--text", text.toString(), "--json");
        Run plain = run("eval", "ppl", "--model", Fixtures.qwen2Tiny().toString(), "--text", text.toString(), "--json");
        double m = merged.json().path("perplexity").asDouble();
        assertEquals(m, adapted.json().path("perplexity").asDouble(), m * 1e-4, adapted.err());
        double b = plain.json().path("perplexity").asDouble();
        assertEquals(b, base.json().path("perplexity").asDouble(), b * 1e-4, base.err());
        // the LoRA task's answer, from the adapter on the base export, as the merged model gives it
        String prompt = "Which character is named in this line?\nGood morrow, Romeo.";
        Run answer = run("generate", "--model", dir.toString(), "--adapter", "task", "--prompt", prompt, "--chat", "--json");
        Run mergedAnswer = run("generate", "--model", mergedModel.toString(), "--prompt", prompt,
                "--chat", "--json");
        assertEquals(0, answer.exit(), answer.err());
        assertEquals(mergedAnswer.json().path("ids"), answer.json().path("ids"));

        Run bad = run("export", "--model", Fixtures.qwen2Tiny().toString(), "--out", tmp.resolve("bad-adapter").toString(),
                "--adapter", "../up=" + peft);
        assertEquals(1, bad.exit());
        assertTrue(bad.err().contains("adapter name '../up'"), bad.err());
        assertFalse(Files.exists(tmp.resolve("bad-adapter")));
        Run hf = run("generate", "--model", Fixtures.qwen2Tiny().toString(), "--adapter", "task", "--prompt", "hi");
        assertEquals(1, hf.exit());
        assertTrue(hf.err().contains("--adapter runs on an ONNX export made with --adapter"), hf.err());
        Run none = run("eval", "ppl", "--model", tmp.resolve("dyn").toString(), "--text", text.toString(), "--adapter",
                dir.resolve("adapters/task.onnx_adapter").toString());
        assertEquals(1, none.exit());
        assertTrue(none.err().contains("its graphs take no LoRA adapter"), none.err());
    }

    @Test
    void badInputGivesAClearErrorAndExitCode() throws Exception {
        Run r = run("export", "--model", tmp.resolve("nope").toString(), "--out", tmp.resolve("x").toString());
        assertEquals(1, r.exit());
        assertTrue(r.err().contains("hexforge: error:") && r.err().contains("config.json"), r.err());
        assertFalse(Files.exists(tmp.resolve("x")));
        Run bad = run("export", "--model", Fixtures.qwen2Tiny().toString(), "--out", tmp.resolve("y").toString(), "--variant", "weird");
        assertEquals(1, bad.exit());
        assertTrue(bad.err().contains("--variant: must be one of [static, dynamic, genie], got 'weird'"), "the schema's check, naming the flag: " + bad.err());
        Run bits = run("quantize", "--model", Fixtures.qwen2Tiny().toString(), "--out", tmp.resolve("z").toString(), "--bits", "9");
        assertEquals(1, bits.exit());
        assertTrue(bits.err().contains("--bits: must be between 2 and 8, got 9"), bits.err());
        assertFalse(Files.exists(tmp.resolve("z")));
        Path notUtf8 = tmp.resolve("bin.txt");
        Files.write(notUtf8, new byte[]{(byte) 0xff, (byte) 0xfe, 0x41});
        Run enc = run("eval", "ppl", "--model", Fixtures.qwen2Tiny().toString(), "--text", notUtf8.toString());
        assertTrue(enc.err().contains("not valid UTF-8"), enc.err());
        assertEquals(2, run("generate", "--model", "x").exit(), "usage error");
    }

    @Test
    void aStaticQuantizeIsW8a16ByDefaultEveryActivationQuantizedAndFloatActivationsAreAskedFor() throws Exception {
        Path full = tmp.resolve("w8a16");
        Run r = run("quantize", "--model", Fixtures.qwen2Tiny().toString(), "--out", full.toString(), "--json");
        assertEquals(0, r.exit(), r.err());
        assertEquals("w8a16", r.json().path("precision").asText());
        assertTrue(r.json().path("full_delta_perplexity").asDouble() < 0.5, r.out());
        Path export = full.resolve("onnx-model");
        assertEquals("w8a16", JSON.readTree(export.resolve("export.json").toFile()).path("precision").asText());
        assertTrue(Files.isRegularFile(full.resolve("checkpoint/activations.json")));
        JsonNode enc = JSON.readTree(export.resolve("encodings.json").toFile());
        assertEquals(16, enc.path("activation_encodings").path("hidden_states.1").path(0).path("bitwidth").asInt(),
                "the converter's overrides carry every activation's encoding: " + enc.path("activation_encodings").size());
        assertEquals(8, enc.path("activation_encodings").path("present.0.key").path(0).path("bitwidth").asInt());
        Run check = run("check-qnn", export.toString(), "--json");
        assertEquals(0, check.exit(), check.out());
        assertEquals("w8a16", check.json().path("graphs").path(0).path("precision").asText(), "the recorded precision is checked");

        Path weightsOnly = tmp.resolve("w8");
        Run w = run("quantize", "--model", Fixtures.qwen2Tiny().toString(), "--out", weightsOnly.toString(), "--activations", "float");
        assertEquals(0, w.exit(), w.err());
        assertEquals("w8", JSON.readTree(weightsOnly.resolve("onnx-model/export.json").toFile()).path("precision").asText());
        Run notReady = run("check-qnn", weightsOnly.resolve("onnx-model").toString(), "--precision", "w8a16");
        assertEquals(1, notReady.exit());
        assertTrue(notReady.out().contains("fp16"), notReady.out());

        Run badActs = run("quantize", "--model", Fixtures.qwen2Tiny().toString(), "--out", tmp.resolve("a12").toString(), "--activations", "12");
        assertEquals(1, badActs.exit());
        assertTrue(badActs.err().contains("--activations: must be one of [auto, 16, 8, float], got '12'"), badActs.err());
        Run badKv = run("quantize", "--model", Fixtures.qwen2Tiny().toString(), "--out", tmp.resolve("kv12").toString(), "--kv-bits", "12");
        assertEquals(1, badKv.exit());
        assertTrue(badKv.err().contains("--kv-bits: must be one of [8, 16], got 12"), badKv.err());
        Run keepHead = run("quantize", "--model", Fixtures.qwen2Tiny().toString(), "--out", tmp.resolve("kh").toString(), "--head", "keep");
        assertEquals(1, keepHead.exit());
        assertTrue(keepHead.err().contains("--head: keep: a float embedding and LM head cannot run beside quantized activations"),
                "refused as the server refuses the job spec, naming the flag: " + keepHead.err());
        for (String dir : List.of("a12", "kv12", "kh")) {
            assertFalse(Files.exists(tmp.resolve(dir)), dir);
        }
    }

    @Test
    void convertTakesTheTargetsSettingsSaysWhereEachCameFromAndSignsTheBundle() throws Exception {
        Path sdk = dev.hexforge.compile.QnnToolStandIn.install(tmp.resolve("qnn-sdk")); // TEST DOUBLE of the QNN SDK's tools
        Path priv = tmp.resolve("convert-key.pem");
        Path pub = tmp.resolve("convert-key.pub.pem");
        assertEquals(0, run("keygen", "--private", priv.toString(), "--public", pub.toString()).exit());
        String model = Fixtures.qwen2Tiny().toString();
        Path out = tmp.resolve("convert-genie");
        Run r = run("convert", "--model", model, "--target", "genie", "--soc", "SM8650", "--bits", "4", "--qnn-sdk", sdk.toString(),
                "--key", priv.toString(), "--out", out.toString(), "--json");
        assertEquals(0, r.exit(), r.err());
        JsonNode s = r.json().path("settings");
        assertEquals("genie", s.path("export.variant").path("value").asText(), s.toString());
        assertTrue(s.path("export.variant").path("source").asText().startsWith("from the target: Genie's graph layout"), s.toString());
        assertEquals("0 (per channel)", s.path("quantize.group").path("value").asText(), "not 128, the 4-bit default");
        assertEquals("--bits", s.path("quantize.bits").path("source").asText());
        assertEquals("default", s.path("quantize.method").path("source").asText());
        assertEquals("quantize, export, compile, sign", s.path("stages").path("value").asText());
        assertEquals(List.of(out.resolve("bundle").toString()), List.of(r.json().path("outputs").get(0).asText()));
        assertEquals("w4a16", r.json().path("bundle").path("precision").asText(), r.json().path("bundle").toString());
        assertTrue(Files.isRegularFile(out.resolve("bundle/genie_config.json")));
        Run verified = run("verify", "--key", pub.toString(), "--provenance", out.resolve("bundle").toString());
        assertEquals(0, verified.exit(), verified.out() + verified.err());

        // the Genie export beside the bundle runs on the host as Genie would: one dialog holds CL - AR-N tokens
        String ids = String.join(",", java.util.Collections.nCopies(380, "100"));
        Run overDialog = run("generate", "--model", out.resolve("onnx-model").toString(), "--prompt-ids", ids, "--max-new", "10");
        assertEquals(1, overDialog.exit());
        assertTrue(overDialog.err().contains("prompt (380) + max new tokens (10) exceed Genie's dialog limit of 384 tokens "
                + "(context 512 - prompt graph AR-128)"), overDialog.err());
        assertEquals(384, JSON.readTree(out.resolve("bundle/manifest.json").toFile()).path("dialogTokens").asInt());

        Path cpu = tmp.resolve("convert-cpu");
        Run c = run("convert", "--model", model, "--target", "ort-cpu", "--bits", "4", "--out", cpu.toString(), "--json");
        assertEquals(0, c.exit(), c.err());
        assertEquals("DYNAMIC", JSON.readTree(cpu.resolve("onnx-model/export.json").toFile()).path("variant").asText());
        assertEquals("auto: float", c.json().path("settings").path("quantize.activations").path("value").asText(),
                "no NPU work for a CPU target");
        assertTrue(c.json().path("full_perplexity").isNull(), "no fully quantized graph scored: " + c.out());
        assertFalse(c.json().path("signed").asBoolean());

        // what the target cannot take, a missing SDK and an unknown SoC are refused before any work, in flags
        Run grouped = run("convert", "--model", model, "--target", "genie", "--bits", "4", "--group", "128", "--qnn-sdk",
                sdk.toString(), "--out", tmp.resolve("c-grouped").toString());
        assertEquals(1, grouped.exit());
        assertTrue(grouped.err().contains("--group: --target genie takes weights per channel (--group 0), not in groups of 128"),
                grouped.err());
        Run noSdk = run("convert", "--model", model, "--target", "genie", "--qnn-sdk", tmp.resolve("c-none").resolve("sdk").toString(),
                "--soc", "SM1234", "--out", tmp.resolve("c-soc").toString());
        assertEquals(1, noSdk.exit());
        assertTrue(noSdk.err().contains("unknown soc 'SM1234' and no --htp-arch given"), noSdk.err());
        Run noTarget = run("convert", "--model", model, "--out", tmp.resolve("c-none").toString());
        assertEquals(2, noTarget.exit(), "a usage error");
        for (String dir : List.of("c-grouped", "c-soc", "c-none")) {
            assertFalse(Files.exists(tmp.resolve(dir)), dir);
        }

        // the steps one at a time: an error names the flag that fixes it, on the command that takes it
        Run wrongLayout = run("compile", "--model", tmp.resolve("static").toString(), "--target", "genie", "--qnn-sdk",
                sdk.toString(), "--out", tmp.resolve("c-layout").toString());
        assertEquals(1, wrongLayout.exit());
        assertTrue(wrongLayout.err().contains("export again with --variant genie (hexforge convert, export, quantize), or quantize "
                + "with --target genie"), wrongLayout.err());
        // a CPU format without a target calibrates nothing, so float linears beside it are no conflict
        Run cpuFormat = run("quantize", "--model", model, "--bits", "4", "--format", "matmulnbits", "--head", "keep", "--out",
                tmp.resolve("q-cpu").toString(), "--json");
        assertEquals(0, cpuFormat.exit(), cpuFormat.err());
        assertTrue(cpuFormat.json().path("precision").isNull(), cpuFormat.out());
    }

    @Test
    void synthWritesALoadableCheckpoint() throws Exception {
        Path out = tmp.resolve("synth");
        Run r = run("synth", "--preset", "tiny", "--dtype", "bf16", "--arch", "llama", "--untied", "--seed", "3",
                "--out", out.toString(), "--json");
        assertEquals(0, r.exit(), r.err());
        JsonNode cfg = JSON.readTree(out.resolve("config.json").toFile());
        assertEquals("llama", cfg.path("model_type").asText());
        assertFalse(cfg.path("tie_word_embeddings").asBoolean());
        Run g = run("generate", "--model", out.toString(), "--prompt", "hello", "--max-new", "4", "--json");
        assertEquals(0, g.exit(), g.err());
        assertEquals(4, g.json().path("ids").size());
        assertEquals(1, run("synth", "--preset", "gpt5", "--out", tmp.resolve("s2").toString()).exit());
    }

    @Test
    void quantizeGatePassesByDefaultAndFailsWhenTight() throws Exception {
        Path text = tmp.resolve("gate.txt");
        Files.writeString(text, Files.readString(Fixtures.root().resolve("corpus/eval_en.txt")).substring(0, 8000));
        Path ok = tmp.resolve("q8");
        Run r = run("quantize", "--model", Fixtures.qwen2Tiny().toString(), "--bits", "8", "--format", "both", "--variant", "dynamic",
                "--eval", text.toString(), "--out", ok.toString(), "--json");
        assertEquals(0, r.exit(), r.err());
        assertTrue(r.json().path("gate_passed").asBoolean());
        assertTrue(r.json().path("delta_perplexity").asDouble() < 0.5);
        assertTrue(Files.isRegularFile(ok.resolve("qdq/onnx/model.onnx")));
        assertTrue(Files.isRegularFile(ok.resolve("matmulnbits/onnx/model.onnx")));
        JsonNode report = JSON.readTree(ok.resolve("quantization_report.json").toFile());
        assertEquals(28 + 1, report.path("layers").size(), "the linears and the tied embedding");
        assertFalse(Files.exists(ok.resolve("qdq/encodings.json")), "a dynamic export is no input of the QNN converter");
        assertFalse(Files.exists(ok.resolve("matmulnbits/encodings.json")), "a CPU export carries no QNN overrides");
        assertTrue(Files.isRegularFile(ok.resolve("checkpoint/hexforge_quant.json")), "the quantized checkpoint the export read");
        assertFalse(Files.exists(ok.resolve("qdq/reference.json")), "no device reference unless asked (--reference), as in a job "
                + "without a benchmark stage");
        Run ppl = run("eval", "ppl", "--model", ok.toString(), "--text", text.toString(), "--json");
        assertEquals(0, ppl.exit(), ppl.err());
        assertTrue(ppl.err().contains("using the model in " + ok.resolve("matmulnbits")), "quantize's output folder names its model: " + ppl.err());
        assertEquals("onnx-dynamic", ppl.json().path("backend").asText());

        Path tight = tmp.resolve("q4tight");
        Run fail = run("quantize", "--model", Fixtures.qwen2Tiny().toString(), "--bits", "4", "--eval", text.toString(),
                "--max-delta-ppl", "0.0001", "--out", tight.toString());
        assertEquals(1, fail.exit());
        assertTrue(fail.err().contains("accuracy gate failed") && fail.err().contains("worst layers"), fail.err());
        assertTrue(Files.isRegularFile(tight.resolve("quantization_report.json")));
        assertFalse(Files.exists(tight.resolve("onnx-model")), "no model behind a failed gate");
        assertFalse(Files.exists(tight.resolve("checkpoint")), "the checkpoint written beside the gate is not kept");
        assertFalse(Files.exists(tight.resolve(".work")), "nor the scratch folder it was written in");

        Run awq = run("quantize", "--model", Fixtures.qwen2Tiny().toString(), "--method", "smoothquant", "--out", tmp.resolve("g").toString());
        assertEquals(1, awq.exit());
        assertTrue(awq.err().contains("--method: must be one of [rtn, awq, gptq], got 'smoothquant'"), awq.err());
        assertFalse(Files.exists(tmp.resolve("g")));

        Path emptyCalib = tmp.resolve("empty.jsonl");
        Files.writeString(emptyCalib, "\n\n");
        Run empty = run("quantize", "--model", Fixtures.qwen2Tiny().toString(), "--method", "gptq", "--calib", emptyCalib.toString(),
                "--out", tmp.resolve("g2").toString());
        assertEquals(1, empty.exit());
        assertTrue(empty.err().contains("no samples"), empty.err());
        Path badCalib = tmp.resolve("bad.jsonl");
        Files.writeString(badCalib, "{\"text\": \"fine\"}\n{not json\n");
        Run bad = run("quantize", "--model", Fixtures.qwen2Tiny().toString(), "--method", "gptq", "--calib", badCalib.toString(),
                "--out", tmp.resolve("g3").toString());
        assertTrue(bad.err().contains("line 2") && bad.err().contains("not valid JSON"), bad.err());
        assertFalse(Files.exists(tmp.resolve("g3")), "nothing left behind on bad input");
    }

    @Test
    void awqQuantizeWritesFoldedNormsIntoTheExport() throws Exception {
        Path out = tmp.resolve("awq");
        Run r = run("quantize", "--model", Fixtures.qwen2Tiny().toString(), "--method", "awq", "--bits", "4",
                "--calib", Fixtures.root().resolve("calib.jsonl").toString(), "--samples", "16", "--calib-len", "128",
                "--format", "qdq", "--variant", "dynamic", "--max-delta-ppl", "1", "--out", out.toString(), "--json");
        assertEquals(0, r.exit(), r.err());
        JsonNode report = JSON.readTree(out.resolve("quantization_report.json").toFile());
        assertEquals(12, report.path("awqGroups").size());
        Path onnx = out.resolve("onnx-model");
        JsonNode ref = Fixtures.json(Fixtures.reference("reference.json")).path("prompts").get(0);
        String ids = java.util.Arrays.stream(Fixtures.ints(ref.path("input_ids"))).mapToObj(String::valueOf)
                .collect(java.util.stream.Collectors.joining(","));
        Run g = run("generate", "--model", onnx.toString(), "--prompt-ids", ids, "--max-new", "4", "--no-stop", "--json");
        assertEquals(0, g.exit(), g.err());
        assertEquals(Fixtures.ints(ref.path("greedy_new_ids"))[0], g.json().path("ids").get(0).asInt(),
                "the 4-bit AWQ model keeps the float model's first greedy token");
    }

    @Test
    void gptqQuantizeWithCalibrationReportsCoverageAndOutputErrors() throws Exception {
        Path out = tmp.resolve("gptq");
        Run r = run("quantize", "--model", Fixtures.qwen2Tiny().toString(), "--method", "gptq", "--bits", "4",
                "--calib", Fixtures.root().resolve("calib.jsonl").toString(), "--samples", "32", "--calib-len", "128",
                "--format", "matmulnbits", "--variant", "dynamic", "--out", out.toString(), "--json");
        assertEquals(0, r.exit(), r.err());
        JsonNode report = JSON.readTree(out.resolve("quantization_report.json").toFile());
        assertEquals(32, report.path("calibration").path("samples").asInt());
        assertTrue(report.path("calibration").path("scriptShare").has("Latin"));
        for (JsonNode layer : report.path("layers")) {
            assertTrue(layer.path("outputError").asDouble() <= layer.path("rtnOutputError").asDouble() * (1 + 1e-9), layer.toString());
        }
        assertTrue(Files.isRegularFile(out.resolve("onnx-model/onnx/model.onnx")));
    }

    @Test
    void mergeWritesAModelThatGeneratesTheTaskAnswer() throws Exception {
        Path out = tmp.resolve("merged");
        Run r = run("merge", "--model", Fixtures.qwen2Tiny().toString(), "--adapter",
                Fixtures.root().resolve("lora-task/reference_adapter").toString(), "--out", out.toString(), "--json");
        assertEquals(0, r.exit(), r.err());
        assertEquals(16, r.json().path("merged_linears").asInt());
        JsonNode example = JSON.readTree(Fixtures.root().resolve("lora-task/eval.json").toFile()).get(0);
        Run g = run("generate", "--model", out.toString(), "--chat", "--prompt",
                example.path("instruction").asText() + "\n" + example.path("input").asText(), "--max-new", "16", "--json");
        assertEquals(0, g.exit(), g.err());
        assertTrue(g.json().path("text").asText().strip().matches("[A-Z]+"), g.out());
        Run bad = run("merge", "--model", Fixtures.qwen2Tiny().toString(), "--adapter", tmp.toString(), "--out", tmp.resolve("m2").toString());
        assertEquals(1, bad.exit());
        assertTrue(bad.err().contains("adapter_config.json"), bad.err());
    }

    static Path taskSlice(int n, String name) {
        return Fixtures.loraTaskLines(n, tmp.resolve(name));
    }

    @Test
    void finetuneWritesAPeftAdapterWithReportAndRefusesToOverwriteIt() throws Exception {
        Path data = taskSlice(64, "task.jsonl");
        Path out = tmp.resolve("adapter");
        String[] args = {"finetune", "--model", Fixtures.qwen2Tiny().toString(), "--data", data.toString(), "--out",
                out.toString(), "--lr", "5e-3", "--batch", "8", "--accum", "2", "--epochs", "2", "--eval-split", "0.125",
                "--json"};
        Run r = run(args);
        assertEquals(0, r.exit(), r.err());
        JsonNode j = r.json();
        assertEquals(8, j.path("steps").asInt(), "56 train examples / 16 per step = 4 steps per epoch");
        assertTrue(j.path("eval_loss").asDouble() < 6.0, r.out());
        assertTrue(Files.isRegularFile(out.resolve("adapter_model.safetensors")));
        assertTrue(Files.isRegularFile(out.resolve("training_report.json")));
        Run again = run(args);
        assertEquals(1, again.exit());
        assertTrue(again.err().contains("already holds a finished adapter"), again.err());
        Run merged = run("merge", "--model", Fixtures.qwen2Tiny().toString(), "--adapter", out.toString(), "--out",
                tmp.resolve("ft-merged").toString(), "--json");
        assertEquals(0, merged.exit(), merged.err());
        Run bad = run("finetune", "--model", Fixtures.qwen2Tiny().toString(), "--data", data.toString(), "--out",
                tmp.resolve("bad").toString(), "--targets", "q_proj,attn_proj");
        assertEquals(1, bad.exit());
        assertTrue(bad.err().contains("--targets: must be one of [q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj], "
                + "got 'attn_proj'"), "refused as the server refuses the job spec, naming the flag: " + bad.err());
    }

    @Test
    void finetuneKilledWithSigkillResumesToTheSameAdapterAsAnUninterruptedRun() throws Exception {
        Path data = taskSlice(96, "kill.jsonl");
        java.util.function.Function<Path, String[]> args = out -> new String[]{"finetune", "--model",
                Fixtures.qwen2Tiny().toString(), "--data", data.toString(), "--out", out.toString(), "--lr", "5e-3",
                "--batch", "8", "--epochs", "6", "--accum", "1", "--eval-split", "0", "--checkpoint-every", "2",
                "--threads", "1", "--json"};
        Path whole = tmp.resolve("kill-whole");
        assertEquals(0, run(args.apply(whole)).exit());

        Path out = tmp.resolve("kill-resumed");
        java.util.List<String> cmd = new java.util.ArrayList<>(java.util.List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(), "--add-modules", "jdk.incubator.vector",
                "-cp", System.getProperty("java.class.path"), Main.class.getName()));
        cmd.addAll(java.util.List.of(args.apply(out)));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(tmp.resolve("kill.log").toFile()).start();
        Path second = out.resolve("checkpoints/step-000004");
        long deadline = System.nanoTime() + 120_000_000_000L;
        while (!Files.isDirectory(second) && p.isAlive() && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
        assertTrue(p.isAlive(), "the run should still be going when killed: " + Files.readString(tmp.resolve("kill.log")));
        p.destroyForcibly().waitFor();
        assertFalse(Files.exists(out.resolve("adapter_model.safetensors")));

        Run resumed = run(args.apply(out));
        assertEquals(0, resumed.exit(), resumed.err());
        assertTrue(resumed.json().path("resumed_from_step").asInt() >= 4, resumed.out());
        try (var a = dev.hexforge.safetensors.SafetensorsFile.open(whole.resolve("adapter_model.safetensors"));
             var b = dev.hexforge.safetensors.SafetensorsFile.open(out.resolve("adapter_model.safetensors"))) {
            for (var t : a.tensors()) {
                assertArrayEquals(a.floats(t.name()), b.floats(t.name()), t.name());
            }
        }
    }

    @Test
    void signAndVerifyLikeTheReferenceTool() throws Exception {
        Path vector = Fixtures.root().resolve("oms-v1.1.0-elliptic-key");
        Run known = run("verify", vector.resolve("model").toString(), "--key", vector.resolve("signing-key-pub.pem").toString(),
                "--ignore", vector.resolve("model/ignore-me").toString(), "--json");
        assertEquals(0, known.exit(), known.err());
        assertTrue(known.json().path("verified").asBoolean());

        Path priv = tmp.resolve("k.pem");
        Path pub = tmp.resolve("k.pub.pem");
        assertEquals(0, run("keygen", "--private", priv.toString(), "--public", pub.toString()).exit());
        Path exported = tmp.resolve("to-sign");
        assertEquals(0, run("export", "--model", Fixtures.qwen2Tiny().toString(), "--out", exported.toString()).exit());
        Path spec = tmp.resolve("job.yaml");
        Files.writeString(spec, "model:\n  path: " + Fixtures.qwen2Tiny() + "\nstages: [export]\n");
        Run signed = run("sign", exported.toString(), "--key", priv.toString(), "--provenance", "--spec", spec.toString(),
                "--material", "base-model=" + Fixtures.qwen2Tiny());
        assertEquals(0, signed.exit(), signed.err());
        Run verified = run("verify", exported.toString(), "--key", pub.toString(), "--provenance", "--json");
        assertEquals(0, verified.exit(), verified.err());
        assertEquals("base-model", verified.json().at("/provenance/buildDefinition/resolvedDependencies/0/name").asText());
        assertEquals("export", verified.json().at("/provenance/buildDefinition/externalParameters/stages/0").asText());
        Files.writeString(exported.resolve("export.json"), Files.readString(exported.resolve("export.json")) + " ");
        Run tampered = run("verify", exported.toString(), "--key", pub.toString());
        assertEquals(1, tampered.exit());
        assertTrue(tampered.err().contains("'export.json' was modified"), tampered.err());
    }
}
