package dev.hexforge.standalone;

import com.fasterxml.jackson.databind.JsonNode;
import dev.hexforge.client.ArtifactDownloader;
import dev.hexforge.client.GatewayClient;
import dev.hexforge.infra.EmbeddedInfra;
import dev.hexforge.infra.EmbeddedS3;
import dev.hexforge.io.ModelArchive;
import dev.hexforge.signing.Keys;
import dev.hexforge.standalone.ProcessFleet.Container;
import dev.hexforge.testing.Fixtures;
import dev.hexforge.testing.fleet.FleetInfra;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.yaml.snakeyaml.Yaml;

import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyPair;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * docker-compose.yml and deploy/kubernetes without Docker or a cluster: every Hexforge service a file runs is started
 * as a process of its own, with the jib image's main class and JVM flags and exactly the environment the file gives
 * its container (compose's variable substitution; Kubernetes' ConfigMap, secret references and mounted secret
 * files), the file's hosts for Kafka, PostgreSQL, S3 and the artifact service pointed at servers on this machine set up
 * with the credentials the file names, its volumes as folders. A job then runs through every stage service and its
 * signed artifact is downloaded through the gateway: the configuration each file passes (variable names, relaxed
 * property binding, the bootstrap token file, the signing key, the artifact service's URL) reaches each service, and
 * the services need nothing but Kafka, PostgreSQL and S3 between them. What this cannot check is the images
 * themselves (jib builds them where Docker runs) and the orchestrators' own behaviour.
 */
@org.junit.jupiter.api.Tag("fleet")
@ExtendWith(FleetInfra.class)
class DeployedAsProcessesTest {
    static final Path ROOT = DeployFilesTest.ROOT;
    static final String SIGNING_KEY_FILE = "signing-key.pem";
    @TempDir
    Path dir;
    static FleetInfra.Endpoints infra;
    static KeyPair signingKey = Keys.generate();

    @BeforeAll
    static void infra(FleetInfra.Endpoints endpoints) {
        infra = endpoints;
    }

    @Test
    @SuppressWarnings("unchecked")
    void dockerComposeFile() throws Exception {
        String secret = "compose-" + Long.toHexString(System.nanoTime());
        Map<String, String> shell = new LinkedHashMap<>(Map.of("HEXFORGE_SECRET", secret)); // what `docker compose up` is run with
        Map<String, Object> compose = new Yaml().load(Files.readString(ROOT.resolve("docker-compose.yml")));
        Map<String, Map<String, Object>> services = (Map<String, Map<String, Object>>) compose.get("services");

        Map<String, String> pg = substitute((Map<String, Object>) services.get("postgres").get("environment"), shell);
        String db = database(pg.get("POSTGRES_USER"), pg.get("POSTGRES_PASSWORD"));
        Map<String, String> minioEnv = substitute((Map<String, Object>) services.get("minio").get("environment"), shell);
        try (EmbeddedS3 s3 = EmbeddedS3.start(dir.resolve("minio"), EmbeddedInfra.Ports.free(), minioEnv.get("MINIO_ROOT_USER"), minioEnv.get("MINIO_ROOT_PASSWORD"))) {
            shell.put("HEXFORGE_S3_PUBLIC_ENDPOINT", s3.endpoint()); // the address users reach S3 at, as the file asks
            Map<String, Path> secretFiles = Map.of(SIGNING_KEY_FILE, signingKeyFile());
            List<Container> containers = composeContainers(dir, services, shell, secretFiles);
            runAJobThrough(containers, Map.of(
                    "kafka:9092", infra.kafka(),
                    "http://minio:9000", s3.endpoint(),
                    "jdbc:postgresql://postgres:5432/" + pg.get("POSTGRES_DB"), jdbcUrlOf(db)));
        }
        assertEquals(pg.get("POSTGRES_USER"), tableOwner(db, "jobs"), "the gateway logs in as the user the file gives it");
    }

    @Test
    @SuppressWarnings("unchecked")
    void kubernetesManifests() throws Exception {
        List<Map<String, Object>> docs = new ArrayList<>();
        new Yaml().loadAll(Files.readString(ROOT.resolve("deploy/kubernetes/hexforge.yaml"))).forEach(d -> docs.add((Map<String, Object>) d));
        Map<String, String> config = new LinkedHashMap<>((Map<String, String>) docs.stream().filter(d -> d.get("kind").equals("ConfigMap"))
                .findFirst().orElseThrow().get("data"));
        // the secret the manifest's header has the operator create, and the public S3 address it asks them to fill in
        String secret = "k8s-" + Long.toHexString(System.nanoTime());
        Map<String, String> secretData = Map.of("s3-secret-key", secret + "-s3", "db-password", secret + "-db",
                "internal-token", secret + "-internal", SIGNING_KEY_FILE, Files.readString(signingKeyFile()));
        String db = database(config.get("HEXFORGE_DB_USER"), secretData.get("db-password"));
        try (EmbeddedS3 s3 = EmbeddedS3.start(dir.resolve("minio"), EmbeddedInfra.Ports.free(), config.get("HEXFORGE_S3_ACCESS_KEY"), secretData.get("s3-secret-key"))) {
            config.put("HEXFORGE_S3_PUBLIC_ENDPOINT", s3.endpoint());
            List<Container> containers = new ArrayList<>();
            for (Map<String, Object> d : docs) {
                if (!d.get("kind").equals("Deployment")) {
                    continue;
                }
                Map<String, Object> pod = (Map<String, Object>) ((Map<String, Object>) ((Map<String, Object>) d.get("spec")).get("template")).get("spec");
                Map<String, Object> c = ((List<Map<String, Object>>) pod.get("containers")).get(0);
                if (!String.valueOf(c.get("image")).startsWith("hexforge/")) {
                    continue;
                }
                String name = String.valueOf(((Map<String, Object>) d.get("metadata")).get("name"));
                Map<String, String> env = new LinkedHashMap<>();
                for (Map<String, Object> from : (List<Map<String, Object>>) c.getOrDefault("envFrom", List.of())) {
                    assertEquals("hexforge", ((Map<String, Object>) from.get("configMapRef")).get("name"), name + " reads another ConfigMap");
                    env.putAll(config);
                }
                for (Map<String, Object> e : (List<Map<String, Object>>) c.getOrDefault("env", List.of())) {
                    Map<String, Object> ref = e.containsKey("valueFrom")
                            ? (Map<String, Object>) ((Map<String, Object>) e.get("valueFrom")).get("secretKeyRef") : null;
                    String value = ref == null ? String.valueOf(e.get("value")) : secretData.get(String.valueOf(ref.get("key")));
                    assertTrue(value != null && !value.equals("null"), name + "'s " + e.get("name") + " names no value or an unknown secret key");
                    env.put(String.valueOf(e.get("name")), value);
                }
                Map<String, Map<String, Object>> volumes = new LinkedHashMap<>();
                ((List<Map<String, Object>>) pod.getOrDefault("volumes", List.of())).forEach(v -> volumes.put(String.valueOf(v.get("name")), v));
                Map<String, Path> mounts = new LinkedHashMap<>();
                for (Map<String, Object> m : (List<Map<String, Object>>) c.getOrDefault("volumeMounts", List.of())) {
                    Map<String, Object> volume = volumes.get(String.valueOf(m.get("name")));
                    assertTrue(volume != null, name + " mounts volume " + m.get("name") + " its pod does not have");
                    Path here = folder(name + "-volume-" + m.get("name"));
                    if (volume.containsKey("secret")) {
                        for (Map<String, Object> item : (List<Map<String, Object>>) ((Map<String, Object>) volume.get("secret")).get("items")) {
                            Files.writeString(here.resolve(String.valueOf(item.get("path"))), secretData.get(String.valueOf(item.get("key"))));
                        }
                    }
                    mounts.put(String.valueOf(m.get("mountPath")), here);
                }
                containers.add(new Container(name, env, mounts));
            }
            runAJobThrough(containers, Map.of(
                    config.get("HEXFORGE_KAFKA"), infra.kafka(),
                    config.get("HEXFORGE_S3_ENDPOINT"), s3.endpoint(),
                    config.get("HEXFORGE_DB_URL"), jdbcUrlOf(db)));
        }
        assertEquals(config.get("HEXFORGE_DB_USER"), tableOwner(db, "jobs"), "the gateway logs in as the user the ConfigMap names");
    }

    /** The Hexforge services of a compose file as containers: their environment after substitution, volumes and secrets as folders under {@code dir}. */
    @SuppressWarnings("unchecked")
    static List<Container> composeContainers(Path dir, Map<String, Map<String, Object>> services, Map<String, String> shell,
                                             Map<String, Path> secretFiles) {
        List<Container> containers = new ArrayList<>();
        hexforgeServices(services).forEach((name, s) -> {
            Map<String, Path> mounts = new LinkedHashMap<>();
            for (Object v : (List<Object>) s.getOrDefault("volumes", List.of())) {
                String mountPath = String.valueOf(v).split(":")[1];
                mounts.put(mountPath, ProcessFleet.folder(dir, name + "-volume-" + String.valueOf(v).split(":")[0]));
            }
            for (String sec : (List<String>) s.getOrDefault("secrets", List.of())) {
                mounts.put("/run/secrets/" + sec, secretFiles.get(sec));
            }
            containers.add(new Container(name, substitute((Map<String, Object>) s.get("environment"), shell), mounts));
        });
        return containers;
    }

    /**
     * Starts the containers as processes, waits for the gateway and the token it writes, runs finetune → merge →
     * quantize → export → compile → sign on an uploaded model and downloads the signed result; stops them all.
     */
    void runAJobThrough(List<Container> containers, Map<String, String> infraHosts) throws Exception {
        try (ProcessFleet fleet = new ProcessFleet(dir, containers, infraHosts, Map.of())) {
            GatewayClient gateway = fleet.awaitGateway(Duration.ofSeconds(180));
            String id = gateway.ok(gateway.send("POST", "/api/v1/jobs", jobOnAnUploadedModel(gateway), "application/json")).path("id").asText();

            JsonNode job = null;
            long deadline = System.nanoTime() + Duration.ofSeconds(300).toNanos();
            while (System.nanoTime() < deadline) {
                job = gateway.ok(gateway.send("GET", "/api/v1/jobs/" + id, null, null));
                if (!job.path("state").asText().equals("running")) {
                    break;
                }
                fleet.assertAllAlive();
                Thread.sleep(300);
            }
            assertEquals("completed", job.path("state").asText(), job + "\n" + fleet.logs());
            List<String> ran = new ArrayList<>();
            for (JsonNode s : job.path("stages")) {
                assertEquals("completed", s.path("state").asText(), s.toString());
                ran.add(s.path("stage").asText());
            }
            assertEquals(List.of("finetune", "merge", "quantize", "export", "compile", "sign"), ran, "one attempt a stage");

            String artifact = job.path("stages").get(5).path("outputs").get(0).path("id").asText();
            ArtifactDownloader.Result got = new ArtifactDownloader(gateway).download(artifact, dir.resolve("downloaded"),
                    signingKey.getPublic(), (path, done, size) -> { });
            assertTrue(got.files() > 1 && got.provenance(), "the bundle downloads, signed with the key the file mounts, with provenance: " + got);
        }
    }

    String jobOnAnUploadedModel(GatewayClient gateway) throws Exception {
        Path archive = dir.resolve("qwen2-tiny.tar");
        try (var out = Files.newOutputStream(archive)) {
            ModelArchive.pack(Fixtures.qwen2Tiny(), out);
        }
        JsonNode upload = gateway.ok(gateway.upload("qwen2-tiny.tar", () -> {
            try {
                return Files.newInputStream(archive);
            } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        }));
        // these deployments read no server folders (hexforge.input-roots is empty): the training data is uploaded too
        Path data = Fixtures.loraTaskLines(16, dir.resolve("task.jsonl"));
        JsonNode dataUpload = gateway.ok(gateway.upload("task.jsonl", () -> {
            try {
                return Files.newInputStream(data);
            } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        }));
        return "{\"name\": \"deployed\", \"model\": {\"upload\": \"" + upload.path("id").asText() + "\"},"
                + " \"stages\": [\"finetune\", \"merge\", \"quantize\", \"export\", \"compile\", \"sign\"],"
                + " \"finetune\": {\"data\": {\"upload\": \"" + dataUpload.path("id").asText() + "\"}, \"batch\": 16, \"accumulation\": 1, \"epochs\": 1},"
                + " \"quantize\": {\"method\": \"rtn\", \"bits\": 8}, \"compile\": {\"target\": \"ort-qnn\"}}";
    }

    /** Compose's variable substitution: {@code ${X}}, {@code ${X:-default}} and {@code ${X:?message}} (a missing X fails). */
    static Map<String, String> substitute(Map<String, Object> environment, Map<String, String> shell) {
        Pattern var = Pattern.compile("\\$\\{([A-Z0-9_]+)(?::([-?])([^}]*))?}");
        Map<String, String> out = new LinkedHashMap<>();
        environment.forEach((k, v) -> {
            Matcher m = var.matcher(String.valueOf(v));
            StringBuilder sb = new StringBuilder();
            while (m.find()) {
                String value = shell.get(m.group(1));
                if (value == null || value.isEmpty()) {
                    if ("?".equals(m.group(2))) {
                        fail("compose would refuse to start: " + m.group(1) + ": " + m.group(3));
                    }
                    value = "-".equals(m.group(2)) ? m.group(3) : "";
                }
                m.appendReplacement(sb, Matcher.quoteReplacement(value));
            }
            m.appendTail(sb);
            out.put(k, sb.toString());
        });
        return out;
    }

    static Map<String, Map<String, Object>> hexforgeServices(Map<String, Map<String, Object>> services) {
        Map<String, Map<String, Object>> out = new LinkedHashMap<>();
        services.forEach((name, s) -> {
            if (String.valueOf(s.get("image")).startsWith("hexforge/")) {
                out.put(name, s);
            }
        });
        return out;
    }

    Path folder(String name) {
        return ProcessFleet.folder(dir, name);
    }

    Path signingKeyFile() throws Exception {
        Path key = folder("secrets").resolve(SIGNING_KEY_FILE);
        if (!Files.exists(key)) {
            Files.writeString(key, Keys.privatePem(signingKey.getPrivate()));
        }
        return key;
    }

    /** A new database on the fleet's PostgreSQL, owned by the user the file names, with the password it gives. */
    static String database(String user, String password) throws Exception {
        String db = "hexforge_deployed_" + Long.toHexString(System.nanoTime());
        try (Connection c = DriverManager.getConnection(infra.jdbcUrl(), infra.dbUser(), infra.dbPassword());
             Statement s = c.createStatement()) {
            s.execute("DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '" + user + "') THEN "
                    + "CREATE ROLE " + user + " LOGIN; END IF; END $$");
            s.execute("ALTER ROLE " + user + " PASSWORD '" + password + "'");
            s.execute("CREATE DATABASE " + db + " OWNER " + user);
        }
        return db;
    }

    static String tableOwner(String database, String table) throws Exception {
        try (Connection c = DriverManager.getConnection(jdbcUrlOf(database), infra.dbUser(), infra.dbPassword());
             Statement s = c.createStatement(); var rs = s.executeQuery("SELECT tableowner FROM pg_tables WHERE tablename = '" + table + "'")) {
            assertTrue(rs.next(), "no table " + table + " in " + database);
            return rs.getString(1);
        }
    }

    /** The fleet's JDBC URL pointed at another database on the same server (its own user parameter dropped: the file names the user). */
    static String jdbcUrlOf(String database) {
        return infra.jdbcUrl().replaceFirst("(jdbc:postgresql://[^/]+/).*", "$1" + database);
    }
}
