package dev.hexforge.standalone;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import dev.hexforge.contracts.Stage;
import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * No Docker engine or cluster runs here, so docker-compose.yml and deploy/kubernetes are checked against the build:
 * every service module that builds a container image (jib) runs in both, under the image name jib gives it, and both
 * tell the gateway that the fleet runs every stage of the job spec.
 */
class DeployFilesTest {
    static final Path ROOT = Path.of("../..").toAbsolutePath().normalize();
    static final YAMLMapper YAML = new YAMLMapper();

    @Test
    void composeAndKubernetesRunEveryServiceImageAndEveryStage() throws Exception {
        String version = version();
        List<String> imaged = new ArrayList<>();
        try (var dirs = Files.list(ROOT.resolve("services"))) {
            for (Path d : dirs.sorted().toList()) {
                Path pom = d.resolve("pom.xml");
                if (Files.isRegularFile(pom) && Files.readString(pom).contains("jib-maven-plugin")) {
                    imaged.add(d.getFileName().toString());
                }
            }
        }
        assertTrue(imaged.containsAll(List.of("gateway", "artifact-service", "export-service", "quantize-service",
                "finetune-service", "compile-service")), imaged.toString());

        JsonNode compose = YAML.readTree(ROOT.resolve("docker-compose.yml").toFile()).path("services");
        List<JsonNode> k8s = YAML.readerFor(JsonNode.class).<JsonNode>readValues(ROOT.resolve("deploy/kubernetes/hexforge.yaml").toFile()).readAll();
        for (String service : imaged) {
            String image = "hexforge/hexforge-" + service + ":" + version;
            assertEquals(image, compose.path(service).path("image").asText(), "docker-compose.yml runs " + service);
            assertEquals("unless-stopped", compose.path(service).path("restart").asText(), service + " comes back when it dies");
            JsonNode deployment = k8s.stream().filter(d -> d.path("kind").asText().equals("Deployment")
                    && d.path("metadata").path("name").asText().equals(service)).findFirst().orElse(null);
            assertTrue(deployment != null, "deploy/kubernetes has a Deployment for " + service);
            assertEquals(image, deployment.path("spec").path("template").path("spec").path("containers").get(0).path("image").asText());
        }

        List<String> stages = Arrays.stream(Stage.values()).map(Stage::id).toList();
        assertEquals(stages, List.of(compose.path("gateway").path("environment").path("HEXFORGE_STAGES").asText().split(",")),
                "the compose gateway is told every stage runs");
        JsonNode config = k8s.stream().filter(d -> d.path("kind").asText().equals("ConfigMap")).findFirst().orElseThrow();
        assertEquals(stages, List.of(config.path("data").path("HEXFORGE_STAGES").asText().split(",")),
                "the Kubernetes ConfigMap tells the gateway every stage runs");
    }

    /** The artifact service's internal API is reachable from the fleet alone, and no deployment reads server folders. */
    @Test
    void theInternalApiIsFencedOffAndJobsReadNoServerFolders() throws Exception {
        JsonNode composeFile = YAML.readTree(ROOT.resolve("docker-compose.yml").toFile());
        JsonNode compose = composeFile.path("services");
        assertTrue(composeFile.path("networks").path("fleet").path("internal").asBoolean(), "the fleet network is internal");
        assertEquals("[\"fleet\"]", compose.path("artifact-service").path("networks").toString());
        assertTrue(compose.path("artifact-service").path("ports").isMissingNode(), "the internal API publishes no port");
        for (String edge : List.of("gateway", "minio")) {
            assertTrue(compose.path(edge).path("networks").toString().contains("edge"), edge + " reaches the users");
        }
        compose.properties().forEach(e -> {
            assertTrue(e.getValue().path("networks").toString().contains("fleet"), e.getKey() + " is on the fleet network");
            assertTrue(!e.getValue().path("environment").toString().contains("INPUT_ROOTS"), e.getKey() + " reads no server folders");
        });
        List<JsonNode> k8s = YAML.readerFor(JsonNode.class).<JsonNode>readValues(ROOT.resolve("deploy/kubernetes/hexforge.yaml").toFile()).readAll();
        JsonNode policy = k8s.stream().filter(d -> d.path("kind").asText().equals("NetworkPolicy")
                && d.path("spec").path("podSelector").path("matchLabels").path("app").asText().equals("artifact-service")).findFirst().orElseThrow();
        assertEquals("gateway", policy.path("spec").path("ingress").path(0).path("from").path(0).path("podSelector").path("matchLabels")
                .path("app").asText());
        assertTrue(!Files.readString(ROOT.resolve("deploy/kubernetes/hexforge.yaml")).contains("INPUT_ROOTS"));
    }

    static String version() throws Exception {
        Matcher m = Pattern.compile("<artifactId>hexforge-parent</artifactId>\\s*<version>([^<]+)</version>")
                .matcher(Files.readString(ROOT.resolve("pom.xml")));
        assertTrue(m.find(), "the parent pom names its version");
        return m.group(1);
    }
}
