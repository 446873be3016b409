package dev.hexforge.contracts;

import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
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
        assertEquals("awq", s.quantize().method());
        assertEquals(8, s.quantize().bits());
        assertEquals(128, s.quantize().group());
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
        JobSpec json = JobSpecReader.read("{\"model\": {\"upload\": \"u1\"}, \"stages\": [\"quantize\", \"export\"], \"quantize\": {\"bits\": 4}}");
        JobSpec yaml = JobSpecReader.read("model:\n  upload: u1\nstages: [quantize, export]\nquantize:\n  bits: 4\n");
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

    @Test
    void crossFieldRulesAreChecked() {
        assertTrue(problems("{\"model\": {\"path\": \"a\", \"upload\": \"b\"}}").contains("model: give exactly one of upload or path"));
        assertTrue(String.join("", problems("{\"model\": {\"path\": \"a\"}, \"stages\": [\"export\", \"quantize\"]}"))
                .contains("'quantize' must come before 'export'"));
        assertTrue(String.join("", problems("{\"model\": {\"path\": \"a\"}, \"stages\": [\"merge\"]}")).contains("'merge' needs 'finetune'"));
        assertTrue(String.join("", problems("{\"model\": {\"path\": \"a\"}, \"stages\": [\"finetune\", \"export\"], "
                + "\"finetune\": {\"data\": \"d.json\"}}")).contains("'export' after 'finetune' needs 'merge'"));
        assertEquals(3, JobSpecReader.read("{\"model\": {\"path\": \"a\"}, \"stages\": [\"finetune\", \"merge\", \"export\"], "
                + "\"finetune\": {\"data\": \"d.json\"}}").stageList().size());
        assertTrue(String.join("", problems("{\"model\": {\"path\": \"a\"}, \"stages\": [\"finetune\"]}")).contains("finetune.data: is required"));
        assertTrue(String.join("", problems("{\"model\": {\"path\": \"a\"}, \"stages\": [\"export\", \"compile\"], \"export\": {\"variant\": \"dynamic\"}}"))
                .contains("compile needs the static variant"));
        assertTrue(String.join("", problems("{\"model\": {\"path\": \"a\"}, \"stages\": [\"quantize\"], \"quantize\": {\"bits\": 3, \"format\": \"matmulnbits\"}}"))
                .contains("matmulnbits takes 4 or 8 bits"));
        assertTrue(String.join("", problems("{\"model\": {\"path\": \"a\"}, \"export\": {\"seq\": 512, \"ctx\": 512}}"))
                .contains("export.seq: must be smaller than export.ctx"));
    }

    @Test
    void whatTheFleetCannotRunIsRefusedWithWhatIsMissing() {
        Capabilities caps = new Capabilities(Set.of(Stage.QUANTIZE, Stage.EXPORT, Stage.COMPILE, Stage.SIGN),
                Set.of("rtn", "gptq"), Set.of("ort-qnn"), Set.of("ort-cpu"));
        JobSpec spec = JobSpecReader.read("{\"model\": {\"path\": \"a\"}, \"stages\": [\"finetune\", \"merge\", \"quantize\", \"export\", \"compile\"],"
                + " \"finetune\": {\"data\": \"d\"}, \"compile\": {\"target\": \"qnn-context-binary\"}}");
        String all = caps.check(spec).toString();
        assertTrue(all.contains("stage 'finetune' cannot run here"), all);
        assertTrue(all.contains("method 'awq' is not available"), all);
        assertTrue(all.contains("needs a QNN SDK") && all.contains("QNN_SDK_ROOT"), all);
        assertTrue(caps.check(JobSpecReader.read("{\"model\": {\"path\": \"a\"}, \"stages\": [\"export\", \"compile\"]}")).isEmpty());
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
