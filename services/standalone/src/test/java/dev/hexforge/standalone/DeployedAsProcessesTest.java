package dev.hexforge.standalone;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.hexforge.artifactservice.ArtifactServiceApplication;
import dev.hexforge.client.ArtifactDownloader;
import dev.hexforge.client.GatewayClient;
import dev.hexforge.compileservice.CompileServiceApplication;
import dev.hexforge.exportservice.ExportServiceApplication;
import dev.hexforge.finetuneservice.FinetuneServiceApplication;
import dev.hexforge.gateway.GatewayApplication;
import dev.hexforge.infra.EmbeddedInfra;
import dev.hexforge.infra.EmbeddedS3;
import dev.hexforge.io.ModelArchive;
import dev.hexforge.quantizeservice.QuantizeServiceApplication;
import dev.hexforge.signing.Keys;
import dev.hexforge.testing.Fixtures;
import dev.hexforge.testing.fleet.FleetInfra;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.yaml.snakeyaml.Yaml;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyPair;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
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
    /** The main class jib finds in each service image (the module's one Spring Boot application). */
    static final Map<String, Class<?>> MAIN = Map.of(
            "gateway", GatewayApplication.class,
            "artifact-service", ArtifactServiceApplication.class,
            "export-service", ExportServiceApplication.class,
            "quantize-service", QuantizeServiceApplication.class,
            "finetune-service", FinetuneServiceApplication.class,
            "compile-service", CompileServiceApplication.class);
    static final String SIGNING_KEY_FILE = "signing-key.pem";
    @TempDir
    Path dir;
    static FleetInfra.Endpoints infra;
    static KeyPair signingKey = Keys.generate();

    @BeforeAll
    static void infra(FleetInfra.Endpoints endpoints) {
        infra = endpoints;
    }

    /** A service as a file describes its container: its environment, and where each container path lives here. */
    record Container(String service, Map<String, String> env, Map<String, Path> mounts) {
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
            List<Container> containers = new ArrayList<>();
            hexforgeServices(services).forEach((name, s) -> {
                Map<String, Path> mounts = new LinkedHashMap<>();
                for (Object v : (List<Object>) s.getOrDefault("volumes", List.of())) {
                    String mountPath = String.valueOf(v).split(":")[1];
                    mounts.put(mountPath, folder(name + "-volume-" + String.valueOf(v).split(":")[0]));
                }
                for (String sec : (List<String>) s.getOrDefault("secrets", List.of())) {
                    mounts.put("/run/secrets/" + sec, secretFiles.get(sec));
                }
                containers.add(new Container(name, substitute((Map<String, Object>) s.get("environment"), shell), mounts));
            });
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

    /**
     * Starts the containers as processes, waits for the gateway and the token it writes, runs finetune → merge →
     * quantize → export → compile → sign on an uploaded model and downloads the signed result; stops them all.
     */
    void runAJobThrough(List<Container> containers, Map<String, String> infraHosts) throws Exception {
        assertEquals(MAIN.keySet(), containers.stream().map(Container::service).collect(java.util.stream.Collectors.toSet()),
                "the file runs every service image");
        int gatewayPort = EmbeddedInfra.Ports.free();
        int artifactPort = EmbeddedInfra.Ports.free();
        Map<String, String> hosts = new LinkedHashMap<>(infraHosts); // the file's service addresses -> where they run here
        hosts.put("http://artifact-service:8081", "http://127.0.0.1:" + artifactPort);
        Path tokenFile = null;
        List<Process> processes = new ArrayList<>();
        try {
            for (Container c : containers) {
                Map<String, String> env = new LinkedHashMap<>();
                for (var v : c.env().entrySet()) {
                    String value = hosts.getOrDefault(v.getValue(), v.getValue());
                    if (value.startsWith("/")) {
                        value = hostPath(c, value).toString();
                    }
                    for (String host : List.of("kafka", "minio", "postgres", ".svc", "artifact-service:")) {
                        assertTrue(!value.contains(host + ":") && !value.contains(host + "/") && !value.contains(host + "."),
                                c.service() + "'s " + v.getKey() + " names a host this test does not map: " + value);
                    }
                    env.put(v.getKey(), value);
                }
                // the ports the containers listen on (published or a Service in front; here each process needs a free one)
                env.put("HEXFORGE_GATEWAY_PORT", String.valueOf(gatewayPort));
                env.put("HEXFORGE_ARTIFACT_PORT", String.valueOf(artifactPort));
                if (c.service().equals("gateway")) {
                    tokenFile = Path.of(env.get("HEXFORGE_BOOTSTRAPTOKENFILE"));
                }
                processes.add(start(c.service(), env));
            }
            assertTrue(tokenFile != null, "the gateway is told where to write the first API token");

            long deadline = System.nanoTime() + Duration.ofSeconds(180).toNanos();
            while (!Files.isRegularFile(tokenFile) || Files.size(tokenFile) == 0 || !healthy(gatewayPort)) {
                if (System.nanoTime() > deadline) {
                    fail("the gateway did not come up: " + logs());
                }
                assertAllAlive(processes);
                Thread.sleep(500);
            }
            GatewayClient gateway = new GatewayClient("http://127.0.0.1:" + gatewayPort, Files.readString(tokenFile).strip());
            String id = gateway.ok(gateway.send("POST", "/api/v1/jobs", jobOnAnUploadedModel(gateway), "application/json")).path("id").asText();

            JsonNode job = null;
            deadline = System.nanoTime() + Duration.ofSeconds(300).toNanos();
            while (System.nanoTime() < deadline) {
                job = gateway.ok(gateway.send("GET", "/api/v1/jobs/" + id, null, null));
                if (!job.path("state").asText().equals("running")) {
                    break;
                }
                assertAllAlive(processes);
                Thread.sleep(300);
            }
            assertEquals("completed", job.path("state").asText(), job + "\n" + logs());
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
        } finally {
            for (Process p : processes) {
                p.destroy();
            }
            for (Process p : processes) {
                if (!p.waitFor(20, TimeUnit.SECONDS)) {
                    p.destroyForcibly().waitFor();
                }
            }
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

    /** A path in the container: under one of its mounts (the longest that fits), else in its own filesystem. */
    Path hostPath(Container c, String path) throws Exception {
        var mount = c.mounts().entrySet().stream()
                .filter(m -> path.equals(m.getKey()) || path.startsWith(m.getKey() + "/"))
                .max(Comparator.comparingInt(m -> m.getKey().length()));
        if (mount.isPresent()) {
            String rest = path.substring(mount.get().getKey().length());
            return rest.isEmpty() ? mount.get().getValue() : Path.of(mount.get().getValue() + rest);
        }
        Path own = folder(c.service() + "-filesystem").resolve(path.substring(1));
        Files.createDirectories(own.getParent());
        return own;
    }

    Path folder(String name) {
        try {
            return Files.createDirectories(dir.resolve(name));
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    Path signingKeyFile() throws Exception {
        Path key = folder("secrets").resolve(SIGNING_KEY_FILE);
        if (!Files.exists(key)) {
            Files.writeString(key, Keys.privatePem(signingKey.getPrivate()));
        }
        return key;
    }

    /** The service as its container runs it: the jib image's JVM flags and main class, nothing but its environment. */
    Process start(String service, Map<String, String> env) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--add-modules", "jdk.incubator.vector", "-XX:+UseParallelGC",
                "-Xmx512m", // six JVMs share this machine (a container's default is a quarter of its memory)
                "-cp", System.getProperty("java.class.path"), MAIN.get(service).getName()));
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(dir.resolve(service + ".log").toFile());
        pb.environment().keySet().retainAll(List.of("PATH"));
        pb.environment().putAll(env);
        pb.directory(folder(service + "-cwd").toFile());
        return pb.start();
    }

    /** A service that exits is a container that stops: neither file restarts one that fails at start-up. */
    void assertAllAlive(List<Process> processes) {
        processes.forEach(p -> assertTrue(p.isAlive(), () -> "a service exited (PID " + p.pid() + ", exit code " + p.exitValue()
                + "; its log names its PID)\n" + logs()));
    }

    static boolean healthy(int port) {
        try {
            return HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/api/v1/health")).build(),
                    HttpResponse.BodyHandlers.discarding()).statusCode() == 200;
        } catch (Exception e) {
            return false;
        }
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

    String logs() {
        StringBuilder sb = new StringBuilder();
        for (String service : MAIN.keySet()) {
            try {
                String s = Files.readString(dir.resolve(service + ".log"));
                sb.append("--- ").append(service).append(" ---\n").append(s.substring(Math.max(0, s.length() - 8000))).append('\n');
            } catch (Exception e) {
                sb.append("--- ").append(service).append(": no log\n");
            }
        }
        return sb.toString();
    }

}
