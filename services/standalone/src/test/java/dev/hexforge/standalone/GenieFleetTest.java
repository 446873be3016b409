package dev.hexforge.standalone;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.hexforge.compile.QnnToolStandIn;
import dev.hexforge.compile.genie.GenieConfig;
import dev.hexforge.compile.genie.GenieConfigRules;
import dev.hexforge.testing.Fixtures;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A fleet job compiling for Genie: the standalone fleet with a QNN SDK (the TEST DOUBLE of its tools, see
 * {@link QnnToolStandIn}) takes {@code compile.target: genie}, and the quantize, export, compile and sign stages give a
 * signed Genie bundle that downloads, verifies and holds what Genie loads.
 */
@org.junit.jupiter.api.Tag("fleet")
class GenieFleetTest {
    @TempDir
    static Path home;
    static Standalone fleet;

    @BeforeAll
    static void up() throws Exception {
        Path sdk = QnnToolStandIn.install(home.resolve("qairt"));
        System.setProperty("hexforge.qnn-sdk-root", sdk.toString());
        try {
            fleet = CliAgainstFleetTest.start(home);
        } finally {
            System.clearProperty("hexforge.qnn-sdk-root");
        }
    }

    @AfterAll
    static void down() {
        CliAgainstFleetTest.stop(fleet);
    }

    @Test
    void aJobCompilingForGenieGivesASignedBundleThatGenieLoads() throws Exception {
        // the target decides the rest: the stages, Genie's layout, per-channel weights, uint16 activations
        Path spec = Files.writeString(home.resolve("genie.yaml"), "name: genie bundle\nmodel:\n  path: " + Fixtures.qwen2Tiny() + "\n"
                + "compile:\n  target: genie\n  soc: SM8650\n  sampler:\n    temperature: 0.6\n");
        CliAgainstFleetTest.Run r = CliAgainstFleetTest.cli("submit", spec.toString(), "--watch", "--json");
        assertEquals(0, r.exit(), r.err() + r.out());
        JsonNode job = new ObjectMapper().readTree(r.out());
        assertEquals("completed", job.path("state").asText(), r.out());
        JsonNode compile = job.path("stages").get(2);
        assertEquals("genie-bundle", compile.path("outputs").get(0).path("kind").asText(), compile.toString());
        JsonNode report = compile.path("report");
        assertEquals("w8a16", report.path("precision").asText(), report.toString());
        int parts = report.path("parts").size();
        assertTrue(parts >= 2, "the embedding, then the layers and head: " + report);
        assertTrue(report.path("deviceMemory").path("weightsShared").asBoolean(), report.toString());

        Path out = home.resolve("bundle");
        String artifact = job.path("stages").get(3).path("outputs").get(0).path("id").asText();
        CliAgainstFleetTest.Run download = CliAgainstFleetTest.cli("download", artifact, "--out", out.toString());
        assertEquals(0, download.exit(), download.err());
        assertTrue(download.out().contains("verified"), download.out());
        JsonNode config = new ObjectMapper().readTree(out.resolve(GenieConfig.FILE).toFile());
        assertEquals(List.of(), GenieConfigRules.check(config));
        assertEquals(0.6, config.at("/dialog/sampler/temp").asDouble(), "the job's sampler");
        List<String> bins = new ArrayList<>();
        config.at("/dialog/engine/model/binary/ctx-bins").forEach(b -> bins.add(b.asText()));
        assertEquals(parts, bins.size());
        for (String bin : bins) {
            assertTrue(Files.isRegularFile(out.resolve(bin)), bin + " is in the bundle");
        }
        for (String f : List.of("htp_backend_ext_config.json", "tokenizer.json", "metadata.json", "manifest.json")) {
            assertTrue(Files.isRegularFile(out.resolve(f)), f);
        }
    }
}
