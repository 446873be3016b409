package dev.hexforge.signing;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyPair;
import java.time.Instant;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ProvenanceTest {
    @TempDir
    Path tmp;

    @Test
    void provenanceIsSignedCoveredByTheModelSignatureAndBoundToTheFolder() throws Exception {
        Path model = Files.createDirectories(tmp.resolve("m"));
        Files.writeString(model.resolve("weights.bin"), "w");
        Path base = Files.createDirectories(tmp.resolve("base"));
        Files.writeString(base.resolve("config.json"), "{}");
        KeyPair keys = Keys.generate();
        JsonNode spec = new ObjectMapper().readTree("{\"model\": {\"path\": \"/base\"}, \"stages\": [\"export\"]}");
        Provenance.sign(model, keys.getPrivate(), new Provenance.Facts(spec, Map.of("base-model", Provenance.digestOf(base)),
                Map.of("hexforge", "0.1.0"), "job-1", Instant.parse("2026-12-02T10:00:00Z"), Instant.parse("2026-12-02T10:01:00Z")));
        ModelSignature.sign(model, keys.getPrivate(), model.resolve(ModelSignature.DEFAULT_SIGNATURE), List.of());

        JsonNode st = Provenance.verify(model, keys.getPublic());
        assertEquals(Provenance.PREDICATE_TYPE, st.path("predicateType").asText());
        assertEquals("export", st.at("/predicate/buildDefinition/externalParameters/stages/0").asText());
        assertEquals("base-model", st.at("/predicate/buildDefinition/resolvedDependencies/0/name").asText());
        assertEquals("job-1", st.at("/predicate/runDetails/metadata/invocationId").asText());
        ModelSignature.Verified v = ModelSignature.verify(model, keys.getPublic(), model.resolve(ModelSignature.DEFAULT_SIGNATURE), List.of());
        assertTrue(v.files().stream().anyMatch(f -> f.name().equals(Provenance.FILE)), "model.sig covers the provenance");

        Files.writeString(model.resolve("weights.bin"), "x");
        VerificationException changed = assertThrows(VerificationException.class, () -> Provenance.verify(model, keys.getPublic()));
        assertTrue(changed.getMessage().contains("changed after the provenance was signed"), changed.getMessage());
        VerificationException other = assertThrows(VerificationException.class, () -> Provenance.verify(model, Keys.generate().getPublic()));
        assertTrue(other.getMessage().contains("provenance signature does not match"), other.getMessage());
        Files.delete(model.resolve(Provenance.FILE));
        assertTrue(assertThrows(VerificationException.class, () -> Provenance.verify(model, keys.getPublic())).getMessage().contains("no provenance"));
    }
}
