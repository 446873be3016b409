package dev.hexforge.contracts;

import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class JobSpecTest {

    static List<String> problems(String text) {
        return assertThrows(InvalidJobSpecException.class, () -> JobSpecReader.read(text)).problems().stream()
                .map(Problem::toString).toList();
    }

    @Test
    void aMinimalSpecGetsTheSeedDefaults() {
        JobSpec s = JobSpecReader.read("{\"model\": {\"path\": \"/models/qwen2.5-0.5b\"}}");
        assertEquals(1, s.schemaVersion());
        assertEquals(List.of("export", "sign"), s.stages());
        assertEquals(8, s.finetune().r());
        assertEquals(16.0, s.finetune().alpha());
        assertEquals(0.05, s.finetune().dropout());
        assertEquals(List.of("q_proj", "k_proj", "v_proj", "o_proj"), s.finetune().targets());
        assertEquals(4, s.finetune().batch());
        assertEquals(8, s.finetune().accumulation());
        assertEquals(2e-4, s.finetune().learningRate());
        assertEquals(3, s.finetune().epochs());
        assertEquals("rtn", s.quantize().method());
        assertEquals(8, s.quantize().bits());
        assertNull(s.quantize().group(), "a rule over bits, not a fixed number");
        assertEquals(0, s.quantize().groupOrDefault(), "8 bits: one scale per channel");
        assertTrue(s.quantize().symmetricOrDefault(), "8 bits per channel: symmetric");
        JobSpec.Quantize int4 = JobSpecReader.read("{\"model\": \"m\", \"quantize\": {\"bits\": 4}}").quantize();
        assertEquals(128, int4.groupOrDefault());
        assertFalse(int4.symmetricOrDefault());
        JobSpec.Quantize asym8 = JobSpecReader.read("{\"model\": \"m\", \"quantize\": {\"symmetric\": false}}").quantize();
        assertFalse(asym8.symmetricOrDefault(), "asked for: asymmetric even at 8 bits per channel");
        assertEquals(128, s.quantize().calibrationSamples());
        assertEquals(0.5, s.quantize().maxDeltaPpl());
        assertEquals(0.0, s.quantize().auto().maxExtraBytesPercent());
        assertEquals(10.0, JobSpecReader.read("{\"model\": {\"path\": \"m\"}, \"quantize\": {\"auto\": {\"maxExtraBytesPercent\": 10}}}")
                .quantize().auto().maxExtraBytesPercent());
        assertEquals(17, s.export().opset());
        assertEquals(128, s.export().seq());
        assertEquals("static", s.export().variant());
        assertEquals("ort-qnn", s.compile().target());
    }

    @Test
    void yamlAndJsonMeanTheSame() {
        String id = "0b9c2a5e-8f1d-4c3b-9a77-2d4e6f8a1b3c";
        JobSpec json = JobSpecReader.read("{\"model\": {\"upload\": \"" + id + "\"}, \"stages\": [\"quantize\", \"export\"], \"quantize\": {\"bits\": 4}}");
        JobSpec yaml = JobSpecReader.read("model:\n  upload: " + id + "\nstages: [quantize, export]\nquantize:\n  bits: 4\n");
        assertEquals(json, yaml);
    }

    @Test
    void everyProblemIsListedWithItsPath() {
        List<String> p = problems("""
                {"model": {"path": "m"}, "colour": "red",
                 "quantize": {"bits": 12, "method": "magic", "groupSize": 64},
                 "finetune": {"lr": 0.1, "r": "eight", "targets": ["q_proj", "qkv"]},
                 "stages": ["export", "teleport"]}""");
        String all = String.join("\n", p);
        assertTrue(all.contains("colour: unknown field"), all);
        assertTrue(all.contains("quantize.bits: must be between 2 and 8, got 12"), all);
        assertTrue(all.contains("quantize.method: must be one of [rtn, awq, gptq], got 'magic'"), all);
        assertTrue(all.contains("quantize.groupSize: unknown field"), all);
        assertTrue(all.contains("finetune.lr: unknown field"), all);
        assertTrue(all.contains("finetune.r: must be an integer"), all);
        assertTrue(all.contains("finetune.targets[1]: must be one of"), all);
        assertTrue(all.contains("stages[1]: must be one of"), all);
        assertEquals(8, p.size(), all);
    }

    @Test
    void malformedDocumentsSayWhere() {
        String json = String.join("", problems("{\"model\": {\"path\": \"m\"},, }"));
        assertTrue(json.contains("malformed JSON at line 1"), json);
        String yaml = String.join("", problems("model:\n  path: [unclosed\n"));
        assertTrue(yaml.contains("malformed YAML"), yaml);
        assertTrue(String.join("", problems("[1, 2]")).contains("must be an object"));
        assertTrue(String.join("", problems("{\"model\": {\"path\": \"a\"}, \"model\": {\"path\": \"b\"}}")).toLowerCase().contains("duplicate"));
        assertTrue(String.join("", problems("{}")).contains("model: is required"));
    }

    /** One document exactly: a second YAML document or a JSON value after the first is refused, not dropped. */
    @Test
    void aSpecIsExactlyOneDocument() {
        String two = "model: /a\n---\nmodel: /b\n";
        InvalidJobSpecException yaml = assertThrows(InvalidJobSpecException.class, () -> JobSpecReader.read(two, JobSpecReader.Format.YAML));
        assertTrue(yaml.problems().get(0).message().contains("exactly one YAML document"), yaml.problems().toString());
        InvalidJobSpecException json = assertThrows(InvalidJobSpecException.class,
                () -> JobSpecReader.read("{\"model\": \"/a\"} {\"model\": \"/b\"}", JobSpecReader.Format.JSON));
        assertTrue(json.problems().get(0).message().contains("exactly one JSON value"), json.problems().toString());
        assertThrows(InvalidJobSpecException.class, () -> JobSpecReader.read("{\"model\": \"/a\"} 1", JobSpecReader.Format.JSON));
        assertEquals("/a", JobSpecReader.read("model: /a\n", JobSpecReader.Format.YAML).model().path());
        assertEquals("/a", JobSpecReader.read("---\nmodel: /a\n...\n", JobSpecReader.Format.YAML).model().path(), "markers of one document");
        assertEquals("/a", JobSpecReader.read("{\"model\": \"/a\"}\n  \n", JobSpecReader.Format.JSON).model().path());
    }

    /** finetune.chatFormat is one of its three names; anything else is a 400 naming the field, never a default. */
    @Test
    void theChatFormatIsOneOfItsNames() {
        assertEquals("auto", JobSpecReader.read("{\"model\": \"/m\"}").finetune().chatFormat());
        assertEquals("llama3", JobSpecReader.read("{\"model\": \"/m\", \"finetune\": {\"chatFormat\": \"llama3\"}}").finetune().chatFormat());
        for (String bad : List.of("\"vicuna\"", "\"../../etc/passwd\"", "\"" + "x".repeat(100_000) + "\"", "1e309", "[\"chatml\"]", "{}")) {
            List<String> p = problems("{\"model\": \"/m\", \"finetune\": {\"chatFormat\": " + bad + "}}");
            assertTrue(String.join("", p).contains("finetune.chatFormat"), bad.substring(0, Math.min(20, bad.length())) + ": " + p);
        }
    }

    @Test
    void activationsAndTheCacheBitsAreOneOfTheirValues() {
        JobSpec.Quantize q = JobSpecReader.read("{\"model\": \"/m\"}").quantize();
        assertEquals("auto", q.activations());
        assertEquals(8, q.kvBits());
        assertEquals(16, JobSpecReader.read("{\"model\": \"/m\", \"quantize\": {\"activations\": \"8\", \"kvBits\": 16}}")
                .quantize().kvBits());
        // YAML reads `activations: 16` as a number: the value is what counts
        assertEquals("16", JobSpecReader.read("model: /m\nquantize:\n  activations: 16\n").quantize().activations());
        for (String bad : List.of("\"4\"", "4", "\"FLOAT \"", "\"" + "x".repeat(100_000) + "\"", "[\"16\"]", "{}")) {
            List<String> p = problems("{\"model\": \"/m\", \"quantize\": {\"activations\": " + bad + "}}");
            assertTrue(String.join("", p).contains("quantize.activations"), bad.substring(0, Math.min(20, bad.length())) + ": " + p);
        }
        for (String bad : List.of("12", "4", "0", "-8", "8.5", "\"8\"", "1e309", "99999999999999999999")) {
            List<String> p = problems("{\"model\": \"/m\", \"quantize\": {\"kvBits\": " + bad + "}}");
            assertTrue(String.join("", p).contains("quantize.kvBits"), bad + ": " + p);
        }
        assertTrue(String.join("", problems("{\"model\": \"/m\", \"quantize\": {\"kvBits\": 12}}"))
                .contains("must be one of [8, 16], got 12"));
    }

    /** Names a person reads refuse what would disguise them: bidi overrides, zero-width characters, controls. */
    @Test
    void namesRefuseInvisibleAndDirectionCharacters() {
        for (String bad : List.of("job\u202Egnp.exe", "a\u200Bb", "a\u2066b", "a\uFEFFb", "a\u2028b", "a\u0007b", "a\uD800b")) {
            List<String> p = problems("{\"model\": \"/m\", \"name\": " + quoted(bad) + "}");
            assertTrue(String.join("", p).contains("name: must not contain control or invisible formatting characters"), bad + ": " + p);
        }
        assertEquals("日本語 — naïve 🙂", JobSpecReader.read("{\"model\": \"/m\", \"name\": \"日本語 — naïve 🙂\"}").name());
        assertEquals(null, PlainText.problem("Ünïcödé names 名前", 200));
    }

    private static String quoted(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            b.append(String.format("\\u%04x", (int) c));
        }
        return b.append('"').toString();
    }

    @Test
    void crossFieldRulesAreChecked() {
        assertTrue(problems("{\"model\": {\"path\": \"a\", \"artifact\": \"0b9c2a5e-8f1d-4c3b-9a77-2d4e6f8a1b3c\"}}")
                .contains("model: give exactly one of upload, artifact, path"));
        assertTrue(String.join("", problems("{\"model\": {\"path\": \"a\"}, \"stages\": [\"export\", \"quantize\"]}"))
                .contains("'quantize' must come before 'export'"));
        assertTrue(String.join("", problems("{\"model\": {\"path\": \"a\"}, \"stages\": [\"merge\"]}")).contains("'merge' needs 'finetune'"));
        assertTrue(String.join("", problems("{\"model\": {\"path\": \"a\"}, \"stages\": [\"finetune\", \"export\"], "
                + "\"finetune\": {\"data\": \"d.json\"}}")).contains("'export' after 'finetune' needs 'merge'"));
        assertEquals(3, JobSpecReader.read("{\"model\": {\"path\": \"a\"}, \"stages\": [\"finetune\", \"merge\", \"export\"], "
                + "\"finetune\": {\"data\": \"d.json\"}}").stageList().size());
        assertTrue(String.join("", problems("{\"model\": {\"path\": \"a\"}, \"stages\": [\"finetune\"]}")).contains("finetune.data: is required"));
        assertTrue(String.join("", problems("{\"model\": {\"path\": \"a\"}, \"stages\": [\"export\", \"compile\"], \"export\": {\"variant\": \"dynamic\"}}"))
                .contains("compile.target ort-qnn needs export.variant: static (the NPU runs fixed shapes), not dynamic"));
        assertTrue(String.join("", problems("{\"model\": {\"path\": \"a\"}, \"stages\": [\"quantize\"], \"quantize\": {\"bits\": 3, \"format\": \"matmulnbits\"}}"))
                .contains("matmulnbits takes 4 or 8 bits"));
        assertTrue(String.join("", problems("{\"model\": {\"path\": \"a\"}, \"export\": {\"seq\": 512, \"ctx\": 512}}"))
                .contains("export.seq: must be smaller than export.ctx"));
    }

    @Test
    void inputsAreAPathOrAnIdAndBindToTheSameRecord() {
        JobSpec plain = JobSpecReader.read("{\"model\": \"/m\", \"stages\": [\"finetune\"], \"finetune\": {\"data\": \"/d.json\"}}");
        assertEquals(JobSpec.Input.ofPath("/m"), plain.model());
        assertEquals(JobSpec.Input.ofPath("/d.json"), plain.finetune().data());
        String id = "0b9c2a5e-8f1d-4c3b-9a77-2d4e6f8a1b3c";
        JobSpec byId = JobSpecReader.read("model: {artifact: " + id + "}\nstages: [finetune]\nfinetune: {data: {upload: " + id + "}}\n");
        assertEquals(id, byId.model().artifact());
        assertEquals(JobSpec.Input.ofUpload(id), byId.finetune().data());
        // a spec stored before inputs were objects still reads
        assertEquals(JobSpec.Input.ofPath("/d.json"), ContractsJson.read(ContractsJson.write(plain).replace("{\"path\":\"/d.json\"}", "\"/d.json\""),
                JobSpec.class).finetune().data());
        String all = String.join("\n", problems("{\"model\": {\"upload\": \"../../secrets\"}, \"stages\": [\"finetune\"], "
                + "\"finetune\": {\"data\": {\"artifact\": \"" + id + "\"}, \"evalData\": 7}}"));
        assertTrue(all.contains("model.upload: must be an id (a UUID), got '../../secrets'"), all);
        assertTrue(all.contains("finetune.data.artifact: unknown field (upload, path)"), all);
        assertTrue(all.contains("finetune.evalData: must be a path or an object with one of [upload, path]"), all);
    }

    @Test
    void hostileValuesAreRefusedWithTheirPathNotInBinding() {
        String all = String.join("\n", problems("{\"model\": \"/m\", \"name\": \"" + "x".repeat(300) + "\", "
                + "\"finetune\": {\"seed\": 9223372036854775808, \"learningRate\": 1e999, \"batch\": 1.5}, "
                + "\"benchmark\": {\"device\": \"" + "d".repeat(300) + "\"}, \"compile\": {\"soc\": \"SM8650; rm -rf\"}}"));
        assertTrue(all.contains("name: must be at most 200 characters, got 300"), all);
        assertTrue(all.contains("finetune.seed: must be between 0 and 9223372036854775807"), all);
        assertTrue(all.contains("finetune.learningRate: must be a finite number"), all);
        assertTrue(all.contains("finetune.batch: must be an integer"), all);
        assertTrue(all.contains("benchmark.device: must be at most 100 characters"), all);
        assertTrue(all.contains("compile.soc: must match"), all);
        assertTrue(String.join("", problems("{\"model\": \"/m\", \"name\": \"a\\u0000b\"}")).contains("name: must not contain control or invisible formatting characters"));
        // YAML's .nan is refused by the parser; a NaN or infinity that reaches the schema (any other reader) is refused there
        assertTrue(String.join("", problems("model: /m\nquantize:\n  maxDeltaPpl: .nan\n")).contains("'.nan'"));
        com.fasterxml.jackson.databind.node.ObjectNode doc = (com.fasterxml.jackson.databind.node.ObjectNode) ContractsJson.MAPPER.createObjectNode()
                .put("model", "/m").set("quantize", ContractsJson.MAPPER.createObjectNode().put("maxDeltaPpl", Double.NaN));
        doc.set("finetune", ContractsJson.MAPPER.createObjectNode().put("alpha", Double.POSITIVE_INFINITY));
        String nan = assertThrows(InvalidJobSpecException.class, () -> JobSpecSchema.validate(doc)).problems().toString();
        assertTrue(nan.contains("quantize.maxDeltaPpl: must be a finite number") && nan.contains("finetune.alpha: must be a finite number"), nan);
        assertTrue(String.join("", problems("{\"model\": \"" + "/a".repeat(600) + "\"}")).contains("model.path: must be at most 1024 characters"));
        String many = java.util.stream.IntStream.range(0, 101).mapToObj(i -> "\"m" + i + "\"").collect(java.util.stream.Collectors.joining(","));
        assertTrue(String.join("", problems("{\"model\": \"/m\", \"quantize\": {\"keep\": [" + many + "]}}"))
                .contains("quantize.keep: must have at most 100 items, got 101"));
        assertEquals(Long.MAX_VALUE, JobSpecReader.read("{\"model\": \"/m\", \"finetune\": {\"seed\": 9223372036854775807}}").finetune().seed());
    }

    @Test
    void whatTheFleetCannotRunIsRefusedWithWhatIsMissing() {
        Capabilities caps = new Capabilities(Set.of(Stage.QUANTIZE, Stage.EXPORT, Stage.COMPILE, Stage.SIGN),
                Set.of("rtn", "gptq"), Set.of("ort-qnn"), Set.of("ort-cpu"));
        JobSpec spec = JobSpecReader.read("{\"model\": {\"path\": \"a\"}, \"stages\": [\"finetune\", \"merge\", \"quantize\", \"export\", \"compile\"],"
                + " \"finetune\": {\"data\": \"d\"}, \"quantize\": {\"method\": \"awq\"}, \"compile\": {\"target\": \"qnn-context-binary\"}}");
        String all = caps.check(spec).toString();
        assertTrue(all.contains("stage 'finetune' cannot run here"), all);
        assertTrue(all.contains("method 'awq' is not available"), all);
        assertTrue(all.contains("needs a QNN SDK") && all.contains("QNN_SDK_ROOT"), all);
        assertTrue(caps.check(JobSpecReader.read("{\"model\": {\"path\": \"a\"}, \"stages\": [\"export\", \"compile\"]}")).isEmpty());
    }

    @Test
    void aGenieBundleNeedsGeniesLayoutAndShapesAndTakesTheSamplerSettings() {
        JobSpec s = JobSpecReader.read("model: m\nstages: [quantize, export, compile]\nexport: {variant: genie, seq: 128, ctx: 4096}\n"
                + "compile: {target: genie, sampler: {temperature: 0.5, topK: 8}}\n");
        assertEquals("genie", s.compile().target());
        assertEquals(new JobSpec.Sampler(42, 0.5, 8, 0.95), s.compile().sampler(), "the defaults filled in");
        assertEquals(2048L << 20, s.export().maxGraphBytes(), "the HTP's limit unless asked");
        assertEquals(512L << 20, JobSpecReader.read("model: m\nexport: {maxGraphMb: 512}\n").export().maxGraphBytes());
        assertTrue(String.join("", problems("model: m\nexport: {maxGraphMb: 4096}\n")).contains("export.maxGraphMb"));
        JobSpec stored = ContractsJson.read(ContractsJson.write(s), JobSpec.class);
        assertEquals(s, stored, "a stored spec reads back the same");
        String wrongLayout = String.join("\n", problems("model: m\nstages: [export, compile]\nexport: {variant: static}\n"
                + "compile: {target: genie}\n"));
        assertTrue(wrongLayout.contains("export.variant: compile.target genie needs export.variant: genie"), wrongLayout);
        String otherTarget = String.join("\n", problems("model: m\nstages: [export, compile]\nexport: {variant: genie, seq: 64}\n"));
        assertTrue(otherTarget.contains("compile.target ort-qnn needs export.variant: static"), otherTarget);
        String shapes = String.join("\n", problems("model: m\nexport: {variant: genie, seq: 32, ctx: 256}\n"));
        assertTrue(shapes.contains("export.seq") && shapes.contains("64 or 128") && shapes.contains("export.ctx"), shapes);
        String bench = String.join("\n", problems("model: m\nstages: [export, compile, benchmark]\nexport: {variant: genie, seq: 64}\n"
                + "compile: {target: genie}\n"));
        assertTrue(bench.contains("benchmark.backends") && bench.contains("[genie]"), "ort-cpu (the default) cannot run it: " + bench);
        assertEquals(List.of("genie"), JobSpecReader.read("model: m\nstages: [export, compile, benchmark]\nexport: {variant: genie, seq: 64}\n"
                + "compile: {target: genie}\nbenchmark: {backends: [genie]}\n").benchmark().backends());
        String overDialog = String.join("\n", problems("model: m\ncompile: {target: genie}\nstages: [quantize, export, compile, "
                + "benchmark]\nbenchmark: {backends: [genie], promptLength: 300, newTokens: 100}\n"));
        assertTrue(overDialog.contains("benchmark.newTokens: benchmark.promptLength 300 + benchmark.newTokens 100 = 400 tokens exceed "
                + "Genie's dialog limit of 384 tokens (context 512 - prompt graph AR-128)"), overDialog);
        String noBundle = String.join("\n", problems("model: m\nstages: [export, benchmark]\nbenchmark: {backends: [genie]}\n"));
        assertTrue(noBundle.contains("compile.target: genie"), noBundle);
        String sampler = String.join("\n", problems("model: m\ncompile: {sampler: {topP: 0, seed: -1, colour: red}}\n"));
        assertTrue(sampler.contains("compile.sampler.topP") && sampler.contains("compile.sampler.seed")
                && sampler.contains("compile.sampler.colour"), sampler);
    }

    @Test
    void aTargetDecidesWhatAJobLeavesOut() {
        JobSpec genie = JobSpecReader.read("model: m\ncompile: {target: genie, soc: SM8750}\nquantize: {bits: 4}\n");
        assertEquals(List.of("quantize", "export", "compile", "sign"), genie.stages());
        assertEquals("genie", genie.export().variant());
        assertEquals(0, genie.quantize().groupOrDefault(), "the QNN converter's encodings are per channel");
        assertEquals("16", genie.quantize().activations());
        assertEquals("qdq", genie.quantize().format());
        List<TargetSettings.Derived> why = TargetSettings.derived(ContractsJson.MAPPER.valueToTree(
                java.util.Map.of("model", "m", "compile", java.util.Map.of("target", "genie"))));
        assertEquals(List.of("stages", "export.variant", "quantize.format", "quantize.activations", "quantize.group"),
                why.stream().map(TargetSettings.Derived::field).toList());
        assertTrue(why.get(1).because().contains("Genie's graph layout"), why.toString());

        JobSpec cpu = JobSpecReader.read("model: m\ncompile: {target: ort-cpu}\nquantize: {bits: 4, head: keep}\n");
        assertEquals(List.of("quantize", "export", "sign"), cpu.stages(), "nothing to compile for the CPU");
        assertEquals("dynamic", cpu.export().variant());
        assertEquals("matmulnbits", cpu.quantize().format());
        assertEquals("auto", cpu.quantize().activations(), "auto: float for a CPU export");

        JobSpec given = JobSpecReader.read("model: m\ncompile: {target: qnn-context-binary}\nexport: {ctx: 1024}\nstages: [quantize, export, compile]\n");
        assertEquals(List.of("quantize", "export", "compile"), given.stages(), "stages given are kept");
        assertEquals(1024, given.export().ctx());
        assertEquals("static", given.export().variant());

        String grouped = String.join("\n", problems("model: m\ncompile: {target: genie}\nquantize: {bits: 4, group: 128}\n"));
        assertTrue(grouped.contains("quantize.group: compile.target genie takes weights per channel (quantize.group: 0), not in "
                + "groups of 128"), grouped);
        String cpuFormat = String.join("\n", problems("model: m\ncompile: {target: ort-qnn}\nquantize: {format: matmulnbits}\n"));
        assertTrue(cpuFormat.contains("quantize.format: matmulnbits is ONNX Runtime's CPU format; compile.target ort-qnn"), cpuFormat);
        String floatActs = String.join("\n", problems("model: m\ncompile: {target: qnn-model-lib}\nquantize: {activations: float}\n"));
        assertTrue(floatActs.contains("quantize.activations: compile.target qnn-model-lib needs quantized activations"), floatActs);
        String int4Head = String.join("\n", problems("model: m\ncompile: {target: genie}\nquantize: {bits: 4, head: int4}\n"));
        assertTrue(int4Head.contains("quantize.head: compile.target genie takes an int8 embedding and head"), int4Head);
        String cpuCompile = String.join("\n", problems("model: m\nstages: [quantize, export, compile]\ncompile: {target: ort-cpu}\n"));
        assertTrue(cpuCompile.contains("stages: 'compile' has nothing to do for compile.target ort-cpu"), cpuCompile);
        // without a target, a CPU format is no NPU export: its activations stay float, so float linears beside them are fine
        assertEquals("keep", JobSpecReader.read("model: m\nstages: [quantize, export]\nquantize: {format: matmulnbits, head: keep}\n")
                .quantize().head());
    }

    @Test
    void floatLinearsBesideQuantizedActivationsAreRefusedAtSubmissionNamingTheField() {
        String all = String.join("\n", problems("model: m\nstages: [quantize, export]\nquantize: {head: keep, keep: [q_proj], "
                + "auto: {maxExtraBytesPercent: 5}, calibration: {path: c.jsonl}}\n"));
        assertTrue(all.contains("quantize.head") && all.contains("quantize.keep") && all.contains("quantize.auto.maxExtraBytesPercent")
                && all.contains("16 for an NPU export"), all);
        // with float activations (or the dynamic CPU export) they are what they were
        JobSpecReader.read("model: m\nstages: [quantize, export]\nquantize: {head: keep, keep: [q_proj], activations: float}\n");
        JobSpecReader.read("model: m\nstages: [quantize, export]\nquantize: {keep: [q_proj]}\nexport: {variant: dynamic}\n");
    }

    /** Quantized inputs and outputs need quantized activations and the static layout; the field is named when refused. */
    @Test
    void quantizedIoNeedsQuantizedActivationsInTheStaticLayout() {
        assertTrue(JobSpecReader.read("model: m\nstages: [quantize, export]\nquantize: {quantizeIo: true}\n").quantize().quantizeIo());
        assertFalse(JobSpecReader.read("model: m\nstages: [quantize, export]\n").quantize().quantizeIo());
        for (String bad : List.of("quantize: {quantizeIo: true, activations: float}\n",
                "quantize: {quantizeIo: true}\nexport: {variant: dynamic}\n",
                "quantize: {quantizeIo: true}\nexport: {variant: genie, ctx: 512}\n",
                "quantize: {quantizeIo: yes please}\n",
                "stages: [quantize, export, compile]\nquantize: {quantizeIo: true}\ncompile: {target: qnn-context-binary}\n")) {
            InvalidJobSpecException e = assertThrows(InvalidJobSpecException.class,
                    () -> JobSpecReader.read("model: m\n" + (bad.startsWith("stages") ? "" : "stages: [quantize, export]\n") + bad), bad);
            assertTrue(e.problems().stream().anyMatch(p -> p.path().equals("quantize.quantizeIo")), bad + ": " + e.problems());
        }
    }

    @Test
    void theCommittedJsonSchemaIsTheGeneratedOne() throws Exception {
        Path committed = Path.of("job-spec.schema.json");
        String generated = JobSpecSchema.jsonSchema().toPrettyString() + "\n";
        if (System.getProperty("hexforge.writeSchema") != null) {
            Files.writeString(committed, generated);
        }
        assertEquals(generated, Files.readString(committed), "regenerate with -Dhexforge.writeSchema");
        assertTrue(generated.contains("\"default\" : 128"));
    }

    @Test
    void eventsRoundTripWithTheirType() {
        StageEvents.Event e = new StageEvents.Progress(StageEvents.SCHEMA_VERSION, "job-1", "att-1", Stage.QUANTIZE,
                Instant.parse("2026-12-02T10:00:00Z"), 42.5, "layer 3/24", Map.of("loss", 0.5));
        String json = ContractsJson.write(e);
        assertTrue(json.contains("\"type\":\"progress\"") && json.contains("2026-12-02T10:00:00Z"), json);
        assertEquals(e, ContractsJson.read(json, StageEvents.Event.class));
        StageEvents.Failed f = new StageEvents.Failed(1, "j", "a", Stage.COMPILE, Instant.EPOCH,
                new StageEvents.StageError("QNN_6036", "dynamic tensor shape", "fix the input with --input_dim"), Map.of("ops", 12));
        assertEquals(f, ContractsJson.read(ContractsJson.write(f), StageEvents.Event.class));
        assertThrows(IllegalArgumentException.class, () -> ContractsJson.read("{\"type\":\"progress\",\"bogus\":1}", StageEvents.Event.class));
        assertEquals("hexforge.stage.quantize.requests.v1", Topics.requests(Stage.QUANTIZE));
        assertFalse(Topics.STAGE_EVENTS.isBlank());
    }
}
