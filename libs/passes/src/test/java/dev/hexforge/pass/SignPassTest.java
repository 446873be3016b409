package dev.hexforge.pass;

import dev.hexforge.contracts.JobSpec;
import dev.hexforge.contracts.JobSpecReader;
import dev.hexforge.signing.Keys;
import dev.hexforge.signing.Provenance;
import dev.hexforge.testing.Fixtures;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyPair;
import java.time.Instant;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The sign pass: what a job's provenance states, from the sources a caller looks its materials up in. */
class SignPassTest {
    @TempDir
    Path tmp;

    /** Materials as a stand-in store and catalogue answer them, recording what was asked. */
    static SignPass.Sources sources(List<SignPass.Earlier> earlier) {
        return new SignPass.Sources() {
            @Override
            public String baseModelDigest() {
                return "base-digest";
            }

            @Override
            public String uploadDigest(String uploadId) {
                return "upload-digest-" + uploadId;
            }

            @Override
            public String fileDigest(String field, JobSpec.Input input) {
                return "file-digest-" + field;
            }

            @Override
            public String baseArtifactDigest() {
                return null;
            }

            @Override
            public List<SignPass.Earlier> earlier() {
                return earlier;
            }
        };
    }

    @Test
    void aJobsProvenanceNamesItsBaseModelDataAndEarlierArtifactsAndStartsWithTheFirstOfThem() {
        JobSpec spec = JobSpecReader.read("model: {path: /models/m}\nstages: [finetune, merge, quantize, export, sign]\n"
                + "finetune: {data: {upload: 0b6c7c2e-3f1a-4d5e-9a8b-1c2d3e4f5a6b}}\nquantize: {calibration: {path: /data/calib.jsonl}}\n");
        Instant first = Instant.parse("2026-12-07T01:00:00Z");
        Provenance.Facts f = SignPass.facts(spec, "job-1", "acme", Instant.parse("2026-12-07T00:59:00Z"), sources(List.of(
                new SignPass.Earlier("finetune", "lora-adapter", "d1", first),
                new SignPass.Earlier("quantize", "quantized-checkpoint", "d2", first.plusSeconds(60)))), Fixtures.qwen2Tiny(), true);
        assertEquals(Map.of("base-model:/models/m", "base-digest",
                "finetune-data:upload/0b6c7c2e-3f1a-4d5e-9a8b-1c2d3e4f5a6b", "upload-digest-0b6c7c2e-3f1a-4d5e-9a8b-1c2d3e4f5a6b",
                "calibration-data:/data/calib.jsonl", "file-digest-quantize.calibration",
                "finetune/lora-adapter", "d1", "quantize/quantized-checkpoint", "d2"), f.materials());
        assertEquals(first, f.startedOn(), "the job's first artifact");
        assertNull(f.origin(), "built by the fleet");
        assertEquals("job-1", f.invocationId());
        assertEquals("/models/m", f.jobSpec().path("model").path("path").asText());
        assertTrue(f.versions().containsKey("hexforge") && f.versions().containsKey("java"), f.versions().toString());
    }

    @Test
    void aSignOnlyJobSaysTheTenantSuppliedTheModelAndTheSignedCopyCarriesTheStatement() throws Exception {
        JobSpec spec = JobSpecReader.read("model: {upload: 0b6c7c2e-3f1a-4d5e-9a8b-1c2d3e4f5a6b}\nstages: [sign]\n");
        Instant requested = Instant.parse("2026-12-07T02:00:00Z");
        Provenance.Facts f = SignPass.facts(spec, "job-2", "acme", requested, sources(List.of()), Fixtures.qwen2Tiny(), false);
        assertEquals(Map.of("base-model:upload/0b6c7c2e-3f1a-4d5e-9a8b-1c2d3e4f5a6b", "upload-digest-0b6c7c2e-3f1a-4d5e-9a8b-1c2d3e4f5a6b"),
                f.materials());
        assertEquals(requested, f.startedOn(), "no earlier artifact: the request");
        assertTrue(f.origin().startsWith("uploaded by tenant acme") && f.origin().endsWith("not built by the fleet"), f.origin());

        KeyPair keys = Keys.generate();
        Path out = SignPass.run(Fixtures.qwen2Tiny(), tmp.resolve("signed"), keys.getPrivate(), f);
        assertTrue(Files.isRegularFile(out.resolve("config.json")), "the model copied");
        try (var files = Files.list(out)) {
            assertTrue(files.anyMatch(p -> p.getFileName().toString().startsWith("provenance")), "the statement signed into the copy");
        }
    }
}
