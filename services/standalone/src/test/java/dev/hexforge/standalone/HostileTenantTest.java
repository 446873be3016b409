package dev.hexforge.standalone;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.hexforge.infra.EmbeddedInfra;
import dev.hexforge.io.ModelArchive;
import dev.hexforge.testing.Fixtures;
import dev.hexforge.testing.HostileArchives;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The standalone fleet attacked as a hostile tenant would: every case is a real request with the exact status and
 * the message it must get. Tenant "mallory" attacks; tenant "alice" owns jobs, uploads, artifacts and a device.
 * The fleet's state folder (secrets, storage, work folders) is the prize; standalone mode lets jobs read the bundled
 * fixtures and the models folder by path, nothing else.
 */
@org.junit.jupiter.api.Tag("fleet")
class HostileTenantTest {
    static final ObjectMapper JSON = new ObjectMapper();
    static final HttpClient HTTP = HttpClient.newBuilder().followRedirects(HttpClient.Redirect.NEVER).build();
    static final String NO_SUCH = "7d444840-9dc0-11d1-b245-5ffdce74fad2";
    @TempDir
    static Path home;
    static Standalone fleet;
    static String gateway;
    static String internal;
    static String alice;
    static String mallory;
    static String aliceJob;
    static String aliceArtifact;
    static String aliceUpload;
    static String aliceDataUpload;
    static String aliceDevice;
    static String aliceTokenId;
    static String malloryDataUpload;
    static String malloryModelUpload;
    static final List<String> JOBS = new ArrayList<>();

    record Reply(int status, String body) {
        JsonNode json() {
            try {
                return JSON.readTree(body);
            } catch (Exception e) {
                throw new AssertionError("not JSON: " + body);
            }
        }
    }

    /** A case: what is tried, and the status and message fragment it must get. */
    record Case(String name, java.util.function.Supplier<Reply> request, int status, String message) {
    }

    @BeforeAll
    static void up() throws Exception {
        fleet = Standalone.start(home, EmbeddedInfra.Ports.anyFree(), 0);
        gateway = fleet.gatewayUrl();
        internal = fleet.artifactServiceUrl();
        String admin = Files.readString(Standalone.tokenFile(home)).strip();
        alice = send("POST", "/api/v1/tokens", "{\"tenant\": \"alice\"}", "application/json", admin).json().path("token").asText();
        mallory = send("POST", "/api/v1/tokens", "{\"tenant\": \"mallory\"}", "application/json", admin).json().path("token").asText();
        aliceTokenId = send("GET", "/api/v1/tokens", null, null, alice).json().path("tokens").path(0).path("id").asText();
        aliceUpload = upload("m.tar.gz", packed(Fixtures.qwen2Tiny()), alice).json().path("id").asText();
        aliceDataUpload = upload("task.jsonl", Files.readAllBytes(Fixtures.loraTaskLines(8, home.resolve("a.jsonl"))), alice).json().path("id").asText();
        malloryDataUpload = upload("task.jsonl", Files.readAllBytes(Fixtures.loraTaskLines(8, home.resolve("m.jsonl"))), mallory).json().path("id").asText();
        malloryModelUpload = upload("m.tar.gz", packed(Fixtures.qwen2Tiny()), mallory).json().path("id").asText();
        aliceDevice = send("POST", "/api/v1/devices", "{\"name\": \"phone\"}", "application/json", alice).json().path("token").asText();
        // a job of alice's that makes a signed artifact: the sign stage over her upload
        JsonNode job = finish(send("POST", "/api/v1/jobs", "{\"model\": {\"upload\": \"" + aliceUpload + "\"}, \"stages\": [\"sign\"]}",
                "application/json", alice).json().path("id").asText(), alice);
        aliceJob = job.path("id").asText();
        aliceArtifact = job.path("stages").path(0).path("outputs").path(0).path("id").asText();
    }

    @AfterAll
    static void down() {
        if (fleet != null) {
            fleet.close();
        }
    }

    static byte[] packed(Path dir) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ModelArchive.pack(dir, out);
        return out.toByteArray();
    }

    static Reply send(String method, String path, String body, String type, String token) {
        return send(method, path, body, type, token, Map.of());
    }

    static Reply send(String method, String path, String body, String type, String token, Map<String, String> headers) {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(gateway + path)).timeout(Duration.ofSeconds(60))
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body));
        if (token != null) {
            b.header("Authorization", "Bearer " + token);
        }
        if (type != null) {
            b.header("Content-Type", type);
        }
        headers.forEach(b::header);
        try {
            HttpResponse<String> r = HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString());
            return new Reply(r.statusCode(), r.body());
        } catch (Exception e) {
            throw new AssertionError(method + " " + path + ": " + e, e);
        }
    }

    static Reply upload(String name, byte[] bytes, String token) {
        try {
            HttpResponse<String> r = HTTP.send(HttpRequest.newBuilder(URI.create(gateway + "/api/v1/uploads?name=" + name))
                    .header("Authorization", "Bearer " + token).header("Content-Type", "application/octet-stream")
                    .POST(HttpRequest.BodyPublishers.ofByteArray(bytes)).build(), HttpResponse.BodyHandlers.ofString());
            return new Reply(r.statusCode(), r.body());
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }

    /** A request line sent byte for byte as written (no client normalises the path), to a base URL. */
    static Reply raw(String base, String method, String rawPath, Map<String, String> headers) {
        URI u = URI.create(base);
        try (Socket s = new Socket(u.getHost(), u.getPort())) {
            s.setSoTimeout(20_000);
            StringBuilder req = new StringBuilder(method + " " + rawPath + " HTTP/1.1\r\nHost: " + u.getHost() + ":" + u.getPort()
                    + "\r\nConnection: close\r\n");
            headers.forEach((k, v) -> req.append(k).append(": ").append(v).append("\r\n"));
            OutputStream out = s.getOutputStream();
            out.write(req.append("\r\n").toString().getBytes(StandardCharsets.ISO_8859_1));
            out.flush();
            // the head, then as many bytes as Content-Length says: the server may keep the connection open after it
            InputStream in = s.getInputStream();
            ByteArrayOutputStream head = new ByteArrayOutputStream();
            while (!head.toString(StandardCharsets.ISO_8859_1).endsWith("\r\n\r\n")) {
                int b = in.read();
                if (b < 0) {
                    break;
                }
                head.write(b);
            }
            String h = head.toString(StandardCharsets.ISO_8859_1);
            java.util.regex.Matcher length = java.util.regex.Pattern.compile("(?im)^content-length:\\s*(\\d+)").matcher(h);
            byte[] body = length.find() ? in.readNBytes(Integer.parseInt(length.group(1))) : in.readAllBytes();
            return new Reply(Integer.parseInt(h.substring(9, 12)), new String(body, StandardCharsets.UTF_8));
        } catch (Exception e) {
            throw new AssertionError(method + " " + rawPath + ": " + e, e);
        }
    }

    static JsonNode finish(String id, String token) throws InterruptedException {
        JOBS.add(id);
        for (int i = 0; i < 600; i++) {
            JsonNode j = send("GET", "/api/v1/jobs/" + id, null, null, token).json();
            if (!j.path("state").asText().equals("running")) {
                return j;
            }
            Thread.sleep(200);
        }
        throw new AssertionError("job " + id + " did not finish");
    }

    static Reply submit(String spec, String token) {
        return send("POST", "/api/v1/jobs", spec, spec.startsWith("{") ? "application/json" : "application/yaml", token);
    }

    /** An upload mallory tries, refused with a 400 naming what is wrong. */
    static Case upload(String name, String fileName, byte[] bytes, String message) {
        return new Case(name, () -> upload(fileName, bytes, mallory), 400, message);
    }

    static Case job(String name, String spec, String message) {
        return new Case(name, () -> submit(spec, mallory), 400, message);
    }

    static String q(Object s) {
        try {
            return JSON.writeValueAsString(String.valueOf(s));
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }

    static Path link(String name, Path target) {
        try {
            Path models = Standalone.modelsFolder(home);
            return Files.createSymbolicLink(models.resolve(name), target);
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }

    @TestFactory
    List<DynamicTest> everyAttackGetsItsExactAnswer() throws Exception {
        Path secrets = home.resolve("secrets");
        Path models = Standalone.modelsFolder(home);
        Path toSecrets = link("secrets-link", secrets);
        Path toEtc = link("etc-link", Path.of("/etc"));
        Path toToken = link("token-link", secrets.resolve("api-token"));
        Path aFile = Files.writeString(models.resolve("notes.txt"), "x");
        Path tiny = Fixtures.qwen2Tiny();
        String outside = "is outside the folders this fleet reads inputs from";
        String spec = "{\"model\": " + q(tiny) + ", \"stages\": [\"finetune\"], \"finetune\": {\"data\": ";
        String internalHex = Files.readString(secrets.resolve("internal-token")).strip();
        List<Case> cases = new ArrayList<>();

        // paths: every path-like field, every way out
        cases.add(job("model.path: the fleet's secrets", "{\"model\": " + q(secrets) + ", \"stages\": [\"sign\"]}", "model.path: " + outside));
        cases.add(job("model.path: /etc", "{\"model\": {\"path\": \"/etc\"}, \"stages\": [\"sign\"]}", "model.path: " + outside));
        cases.add(job("model.path: a folder that does not exist gets the same answer", "{\"model\": \"/nonexistent-dir\", \"stages\": [\"sign\"]}",
                "model.path: " + outside));
        cases.add(job("model.path: '..' out of a root", "{\"model\": " + q(tiny + "/../../../../etc") + ", \"stages\": [\"sign\"]}",
                "model.path: " + outside));
        cases.add(job("model.path: relative", "{\"model\": \"fixtures/qwen2-tiny\", \"stages\": [\"sign\"]}", "model.path: must be an absolute path"));
        cases.add(job("model.path: a link in a root to the secrets", "{\"model\": " + q(toSecrets) + ", \"stages\": [\"sign\"]}", "model.path: " + outside));
        cases.add(job("model.path: a link in a root to /etc", "{\"model\": " + q(toEtc) + ", \"stages\": [\"sign\"]}", "model.path: " + outside));
        cases.add(job("model.path: another tenant's work folder", "{\"model\": " + q(home.resolve("work/artifacts")) + ", \"stages\": [\"sign\"]}",
                "model.path: " + outside));
        cases.add(job("model.path: the object store's data", "{\"model\": " + q(home.resolve("infra")) + ", \"stages\": [\"sign\"]}",
                "model.path: " + outside));
        cases.add(job("model.path: /proc/self", "{\"model\": \"/proc/self\", \"stages\": [\"sign\"]}", "model.path: " + outside));
        cases.add(job("model.path: a file, not a folder", "{\"model\": " + q(aFile) + ", \"stages\": [\"sign\"]}", "model.path: is not a folder"));
        cases.add(job("finetune.data: /etc/passwd", spec + "\"/etc/passwd\"}}", "finetune.data.path: " + outside));
        cases.add(job("finetune.evalData: /proc/self/environ", spec + q(models.resolve("notes.txt")) + ", \"evalData\": \"/proc/self/environ\"}}",
                "finetune.evalData.path: " + outside));
        cases.add(job("quantize.calibration: /etc/hostname", "{\"model\": " + q(tiny) + ", \"stages\": [\"quantize\"], \"quantize\": "
                + "{\"calibration\": \"/etc/hostname\"}}", "quantize.calibration.path: " + outside));
        cases.add(job("quantize.calibration: named though no quantize stage runs", "{\"model\": " + q(tiny) + ", \"stages\": [\"sign\"], "
                + "\"quantize\": {\"calibration\": {\"path\": \"/etc/shadow\"}}}", "quantize.calibration.path: " + outside));
        cases.add(job("finetune.data: the admin token file", spec + q(secrets.resolve("api-token")) + "}}", "finetune.data.path: " + outside));
        cases.add(job("finetune.data: a link in a root to the admin token", spec + q(toToken) + "}}", "finetune.data.path: " + outside));
        cases.add(job("finetune.data: a folder", spec + q(models) + "}}", "finetune.data.path: is not a regular file"));
        cases.add(job("model.upload: a path in disguise", "{\"model\": {\"upload\": \"../../secrets\"}}", "model.upload: must be an id (a UUID)"));

        // another tenant's ids, in a job
        cases.add(job("model.upload: alice's upload", "{\"model\": {\"upload\": \"" + aliceUpload + "\"}, \"stages\": [\"sign\"]}",
                "model.upload: no upload '" + aliceUpload + "'"));
        cases.add(job("finetune.data.upload: alice's data", spec + "{\"upload\": \"" + aliceDataUpload + "\"}}}",
                "finetune.data.upload: no upload '" + aliceDataUpload + "'"));
        cases.add(job("model.artifact: alice's artifact", "{\"model\": {\"artifact\": \"" + aliceArtifact + "\"}, \"stages\": [\"sign\"]}",
                "model.artifact: no artifact '" + aliceArtifact + "'"));
        cases.add(job("model.upload: a data file as a model", "{\"model\": {\"upload\": \"" + malloryDataUpload + "\"}, \"stages\": [\"sign\"]}",
                "is a jsonl file, not a model archive"));
        cases.add(job("finetune.data.upload: a model archive as data", spec + "{\"upload\": \"" + malloryModelUpload + "\"}}}",
                "is a tar.gz model archive, not a data file"));

        // values: each checked before use
        cases.add(job("name: 300 characters", "{\"model\": " + q(tiny) + ", \"name\": \"" + "n".repeat(300) + "\"}", "name: must be at most 200 characters"));
        cases.add(job("name: a NUL", "{\"model\": " + q(tiny) + ", \"name\": \"a\\u0000b\"}", "name: must not contain control or invisible formatting characters"));
        cases.add(job("model.path: 2000 characters", "{\"model\": \"/" + "p".repeat(2000) + "\"}", "model.path: must be at most 1024 characters"));
        cases.add(job("finetune.seed: 2^63", "{\"model\": " + q(tiny) + ", \"finetune\": {\"seed\": 9223372036854775808}}",
                "finetune.seed: must be between 0 and 9223372036854775807"));
        cases.add(job("quantize.maxDeltaPpl: .nan", "model: " + tiny + "\nquantize:\n  maxDeltaPpl: .nan\n", "'.nan'"));
        cases.add(job("benchmark.device: 300 characters", "{\"model\": " + q(tiny) + ", \"benchmark\": {\"device\": \"" + "d".repeat(300) + "\"}}",
                "benchmark.device: must be at most 100 characters"));
        cases.add(job("finetune.maxLength: past the deployment's limit", spec + q(models.resolve("notes.txt")) + ", \"maxLength\": 32768}}",
                "finetune.maxLength: must be at most 2048 on this fleet"));
        cases.add(job("finetune.learningRate: a string", "{\"model\": " + q(tiny) + ", \"finetune\": {\"learningRate\": \"fast\"}}",
                "finetune.learningRate: must be a number"));
        cases.add(new Case("job body over 1 MiB: refused before it is buffered", () -> submit("{\"name\": \"" + "x".repeat(1_100_000) + "\"}",
                mallory), 413, "the job document is larger than 1048576 bytes"));
        cases.add(new Case("job body claiming 1.2 GB", () -> raw(gateway, "POST", "/api/v1/jobs", Map.of("Authorization", "Bearer " + mallory,
                "Content-Type", "application/json", "Content-Length", "1200000000")), 413, "larger than 1048576 bytes"));
        cases.add(new Case("download ?path={x}", () -> send("GET", "/api/v1/artifacts/" + aliceArtifact + "/download?path=%7Bx%7D", null, null, alice),
                404, "has no file '{x}'"));
        cases.add(new Case("token for a tenant named '..'", () -> send("POST", "/api/v1/tokens", "{\"tenant\": \"..\"}", "application/json",
                readAdmin()), 400, "tenant must be 1-100 letters"));
        cases.add(new Case("token with a wrong-typed tenant", () -> send("POST", "/api/v1/tokens", "{\"tenant\": 5}", "application/json", mallory),
                400, "tenant: must be a string"));
        cases.add(new Case("token with a wrong-typed name", () -> send("POST", "/api/v1/tokens", "{\"name\": [1]}", "application/json", mallory),
                400, "name: must be a string"));
        cases.add(new Case("device with a wrong-typed name", () -> send("POST", "/api/v1/devices", "{\"name\": 7}", "application/json", mallory),
                400, "name: must be a string"));
        cases.add(new Case("device with an unknown field", () -> send("POST", "/api/v1/devices", "{\"name\": \"p\", \"soc\": \"x\"}",
                "application/json", mallory), 400, "soc: unknown field"));
        cases.add(new Case("token with a second JSON value after it", () -> send("POST", "/api/v1/tokens", "{\"name\": \"a\"} {}",
                "application/json", mallory), 400, "one JSON value with nothing after it"));
        cases.add(new Case("runner registration with no backends", () -> send("POST", "/api/v1/runner/register", registration("null"),
                "application/json", aliceDevice), 400, "backends: name at least one of"));
        cases.add(new Case("runner registration with an unknown backend", () -> send("POST", "/api/v1/runner/register",
                registration("[\"rm -rf\"]"), "application/json", aliceDevice), 400, "backends[0]: 'rm -rf' is not one of"));
        cases.add(new Case("runner registration with a wrong-typed ramBytes", () -> send("POST", "/api/v1/runner/register",
                registration("[\"ort-cpu\"]").replace("\"ramBytes\": 0", "\"ramBytes\": \"lots\""), "application/json",
                aliceDevice), 400, "ramBytes: must be a whole number"));
        cases.add(new Case("runner heartbeat with a wrong-typed taskId", () -> send("POST", "/api/v1/runner/heartbeat", "{\"taskId\": {}}",
                "application/json", aliceDevice), 400, "taskId: must be a string"));
        cases.add(new Case("runner registration that is not JSON", () -> send("POST", "/api/v1/runner/register", "{backends",
                "application/json", aliceDevice), 400, "the body is not the expected JSON object"));
        cases.add(new Case("runner registration with an unknown field", () -> send("POST", "/api/v1/runner/register",
                registration("[\"ort-cpu\"]").replace("{", "{\"chipset\": \"SM8650\", "), "application/json", aliceDevice),
                400, "chipset: unknown field"));
        cases.add(new Case("runner registration with 20,000 backends", () -> send("POST", "/api/v1/runner/register",
                registration("[" + String.join(",", java.util.Collections.nCopies(20_000, "\"ort-cpu\"")) + "]"), "application/json",
                aliceDevice), 400, "backends: at most " + dev.hexforge.contracts.DeviceMessages.BACKENDS.size() + " (each known backend once)"));
        cases.add(new Case("runner registration with a backend listed twice", () -> send("POST", "/api/v1/runner/register",
                registration("[\"ort-cpu\", \"ort-cpu\"]"), "application/json", aliceDevice), 400, "backends[1]: 'ort-cpu' is listed twice"));
        cases.add(new Case("runner registration followed by a second JSON value", () -> send("POST", "/api/v1/runner/register",
                registration("[\"ort-cpu\"]") + " {}", "application/json", aliceDevice), 400, "one JSON value with nothing after it"));
        cases.add(new Case("runner registration with a right-to-left override in os", () -> send("POST", "/api/v1/runner/register",
                registration("[\"ort-cpu\"]").replace("\"linux\"", "\"linux\\u202Egnp.exe\""), "application/json", aliceDevice), 400,
                "os: must not contain control or invisible formatting characters"));
        cases.add(new Case("runner result with HTML for a figure", () -> send("POST", "/api/v1/runner/tasks/" + NO_SUCH + "/result",
                result("\"decodeTokensPerSecond\": 12.5", "\"decodeTokensPerSecond\": \"<img src=x onerror=alert(1)>\""),
                "application/json", aliceDevice), 400, "results[0].decodeTokensPerSecond: must be a number"));
        cases.add(new Case("runner result with a figure as a numeric string", () -> send("POST", "/api/v1/runner/tasks/" + NO_SUCH + "/result",
                result("\"decodeTokensPerSecond\": 12.5", "\"decodeTokensPerSecond\": \"12.5\""), "application/json", aliceDevice),
                400, "results[0].decodeTokensPerSecond: must be a number"));
        cases.add(new Case("runner result with an unknown figure", () -> send("POST", "/api/v1/runner/tasks/" + NO_SUCH + "/result",
                result("\"loadSeconds\": 1.0", "\"loadSeconds\": 1.0, \"hype\": 9000"), "application/json", aliceDevice),
                400, "results[0].hype: unknown field"));
        cases.add(new Case("runner result with a negative rate", () -> send("POST", "/api/v1/runner/tasks/" + NO_SUCH + "/result",
                result("\"decodeTokensPerSecond\": 12.5", "\"decodeTokensPerSecond\": -1"), "application/json", aliceDevice),
                400, "results[0].decodeTokensPerSecond: must be a finite number"));
        cases.add(new Case("runner result with a not-available reason for no figure", () -> send("POST", "/api/v1/runner/tasks/" + NO_SUCH
                        + "/result", result("\"notAvailable\": {}", "\"notAvailable\": {\"<script>\": \"x\"}"), "application/json",
                aliceDevice), 400, "is not a figure of a result"));
        cases.add(new Case("a well-formed result for a task that is not the device's", () -> send("POST", "/api/v1/runner/tasks/" + NO_SUCH
                + "/result", result("", ""), "application/json", aliceDevice), 409, "is not leased to this device"));

        // names a person reads, and one document per spec
        cases.add(job("name: a right-to-left override", "{\"model\": " + q(tiny) + ", \"name\": \"job\\u202Egnp.exe\"}",
                "name: must not contain control or invisible formatting characters (U+202E"));
        cases.add(job("name: a zero-width space", "{\"model\": " + q(tiny) + ", \"name\": \"a\\u200Bb\"}",
                "name: must not contain control or invisible formatting characters (U+200B"));
        cases.add(job("a spec of two YAML documents", "model: " + tiny + "\nstages: [sign]\n---\nmodel: /etc\n",
                "exactly one YAML document"));
        cases.add(job("a spec followed by a second JSON value", "{\"model\": " + q(tiny) + ", \"stages\": [\"sign\"]} {\"model\": \"/etc\"}",
                "exactly one JSON value"));
        cases.add(new Case("a token named with a right-to-left override", () -> send("POST", "/api/v1/tokens", "{\"name\": \"ci\\u202Etxt.exe\"}",
                "application/json", mallory), 400, "name: must not contain control or invisible formatting characters"));
        cases.add(new Case("an upload named with a zero-width joiner", () -> upload("m%E2%80%8D.tar", new byte[10], mallory), 400,
                "name: must not contain control or invisible formatting characters"));

        // the fleet's internal API and the auth filters: every other spelling of a path
        cases.add(new Case("/internal;x/ on the artifact service", () -> raw(internal, "GET", "/internal;x/v1/artifacts?tenant=alice", Map.of()),
                400, "path parameters (';') are not accepted"));
        cases.add(new Case("/internal/ without the secret", () -> raw(internal, "GET", "/internal/v1/artifacts?tenant=alice", Map.of()),
                401, "missing or wrong X-Hexforge-Internal"));
        cases.add(new Case("/internal/ with a wrong secret", () -> raw(internal, "GET", "/internal/v1/keys", Map.of("X-Hexforge-Internal",
                internalHex + "0")), 401, "missing or wrong X-Hexforge-Internal"));
        cases.add(new Case("/INTERNAL/ (case)", () -> raw(internal, "GET", "/INTERNAL/v1/keys", Map.of()), 401, "missing or wrong"));
        // Tomcat itself refuses encoded slashes and backslashes, before any filter: its own page, no detail
        cases.add(new Case("/internal%2Fv1/", () -> raw(internal, "GET", "/internal%2Fv1/artifacts?tenant=alice", Map.of()), 400, "Bad Request"));
        cases.add(new Case("//internal/", () -> raw(internal, "GET", "//internal/v1/keys", Map.of()), 400, "empty path segment"));
        cases.add(new Case("/x/../internal/", () -> raw(internal, "GET", "/x/../internal/v1/keys", Map.of()), 400, "'..' segment"));
        cases.add(new Case("/%2e%2e/internal/", () -> raw(internal, "GET", "/api/%2e%2e/internal/v1/keys", Map.of()), 400, "encoded '%2e'"));
        cases.add(new Case("/api;x/v1/keys", () -> raw(gateway, "GET", "/api;x/v1/keys", Map.of()), 400, "path parameters"));
        cases.add(new Case("/api;x/v1/examples", () -> raw(gateway, "GET", "/api;x/v1/examples", Map.of()), 400, "path parameters"));
        cases.add(new Case("/api/v1/keys. (trailing dot)", () -> raw(gateway, "GET", "/api/v1/keys.", Map.of()), 400, "ending in '.'"));
        cases.add(new Case("/api/v1/./keys", () -> raw(gateway, "GET", "/api/v1/./keys", Map.of()), 400, "'.' segment"));
        cases.add(new Case("/api/v1\\keys", () -> raw(gateway, "GET", "/api/v1%5ckeys", Map.of()), 400, "Bad Request"));
        cases.add(new Case("/api/v1/%252e%252e/", () -> raw(gateway, "GET", "/api/v1/%252e%252e/keys", Map.of()), 400, "encoded '%25'"));
        cases.add(new Case("/API/v1/keys (case)", () -> raw(gateway, "GET", "/API/v1/keys", Map.of()), 401, "missing API token"));
        cases.add(new Case("/api/v1/examples without a token", () -> raw(gateway, "GET", "/api/v1/examples", Map.of()), 401, "missing API token"));
        cases.add(new Case("an unknown page without a token", () -> raw(gateway, "GET", "/actuator/env", Map.of()), 401, "missing API token"));
        cases.add(new Case("'bearer' in lower case is a bearer token", () -> send("GET", "/api/v1/jobs", null, null, null,
                Map.of("Authorization", "bearer " + mallory)), 200, "\"jobs\""));

        // another tenant's ids on every endpoint: the same 404 as an id that does not exist
        cases.add(new Case("GET alice's job", () -> send("GET", "/api/v1/jobs/" + aliceJob, null, null, mallory), 404, "job " + aliceJob));
        cases.add(new Case("alice's job's event stream", () -> send("GET", "/api/v1/jobs/" + aliceJob + "/events", null, null, mallory), 404, aliceJob));
        cases.add(new Case("cancel alice's job", () -> send("POST", "/api/v1/jobs/" + aliceJob + "/cancel", null, null, mallory), 404, aliceJob));
        cases.add(new Case("resume alice's job", () -> send("POST", "/api/v1/jobs/" + aliceJob + "/resume", null, null, mallory), 404, aliceJob));
        cases.add(new Case("GET alice's artifact", () -> send("GET", "/api/v1/artifacts/" + aliceArtifact, null, null, mallory), 404,
                "no artifact " + aliceArtifact));
        cases.add(new Case("download alice's artifact", () -> send("GET", "/api/v1/artifacts/" + aliceArtifact + "/download?path=model.sig", null, null,
                mallory), 404, "no artifact " + aliceArtifact));
        cases.add(new Case("alice's artifacts by her job", () -> send("GET", "/api/v1/artifacts?job=" + aliceJob, null, null, mallory), 200,
                "\"artifacts\":[]"));
        cases.add(new Case("GET alice's upload", () -> send("GET", "/api/v1/uploads/" + aliceUpload, null, null, mallory), 404, "no upload " + aliceUpload));
        cases.add(new Case("list uploads shows none of alice's", () -> send("GET", "/api/v1/uploads", null, null, mallory), 200,
                "\"total\":2"));
        cases.add(new Case("benchmarks show none of alice's", () -> send("GET", "/api/v1/benchmarks", null, null, mallory), 200, "[]"));
        cases.add(new Case("revoke alice's token", () -> send("DELETE", "/api/v1/tokens/" + aliceTokenId, null, null, mallory), 404,
                "no token " + aliceTokenId));
        cases.add(new Case("remove a device that is not mallory's", () -> send("DELETE", "/api/v1/devices/" + NO_SUCH, null, null, mallory), 404,
                "no device " + NO_SUCH));
        cases.add(new Case("a device token on the jobs API", () -> send("GET", "/api/v1/jobs", null, null, aliceDevice), 403,
                "a device token only runs benchmark tasks"));
        cases.add(new Case("a device token on another tenant's artifact", () -> send("GET", "/api/v1/artifacts/" + aliceArtifact, null, null,
                send("POST", "/api/v1/devices", "{\"name\": \"m-phone\"}", "application/json", mallory).json().path("token").asText()), 404,
                "no artifact"));

        // archives
        cases.add(upload("a tar.gz that unpacks 200 MB of zeros", "bomb.tar.gz", HostileArchives.zerosTarGz(200), "a zip bomb?"));
        cases.add(upload("a zip with a symbolic link", "m.zip", HostileArchives.zipWithSymlink("model.safetensors", "../../secrets/signing-key.pem"),
                "'model.safetensors' is a symbolic link"));
        cases.add(upload("a tar with a symbolic link", "m.tar", HostileArchives.tarWith("weights", TarArchiveEntry.LF_SYMLINK, "/etc/shadow"),
                "'weights' is a symbolic link"));
        cases.add(upload("a tar with a hard link", "m.tar", HostileArchives.tarWith("weights", TarArchiveEntry.LF_LINK, "config.json"),
                "'weights' is a hard link"));
        cases.add(upload("a tar naming config.json twice, as ./config.json", "m.tar", HostileArchives.tarWith("./config.json",
                TarArchiveEntry.LF_NORMAL, null), "appears twice"));
        cases.add(new Case("an upload named with a slash", () -> upload("../m.tar", new byte[10], mallory), 400, "no slashes"));

        // the dashboard's session
        Map<String, String> sameSite = Map.of("Origin", gateway, "Sec-Fetch-Site", "same-origin");
        cases.add(new Case("cross-site sign-in (login CSRF)", () -> send("POST", "/ui/session", "token=" + mallory,
                "application/x-www-form-urlencoded", null, Map.of("Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site")), 403,
                "sign in from the dashboard's own page"));
        cases.add(new Case("sign-in with neither Origin nor Sec-Fetch-Site", () -> send("POST", "/ui/session", "token=" + mallory,
                "application/x-www-form-urlencoded", null), 403, "sign in from the dashboard's own page"));
        cases.add(new Case("cross-site sign-out", () -> send("POST", "/ui/logout", null, null, null,
                Map.of("Origin", "https://evil.example")), 403, "sign out from the dashboard's own page"));
        cases.add(new Case("a cookie holding a raw API token is no session", () -> send("GET", "/api/v1/jobs", null, null, null,
                Map.of("Cookie", "hexforge_session=" + mallory)), 401, "the session has ended"));
        cases.add(new Case("a change through the cookie without the UI header", () -> {
            String cookie = signIn(mallory, sameSite);
            return send("POST", "/api/v1/jobs", "{\"model\": " + q(tiny) + "}", "application/json", null, Map.of("Cookie", cookie));
        }, 403, "needs the X-Hexforge-UI header"));
        cases.add(new Case("a session after sign-out", () -> {
            String cookie = signIn(mallory, sameSite);
            Map<String, String> h = new LinkedHashMap<>(sameSite);
            h.put("Cookie", cookie);
            send("POST", "/ui/logout", null, null, null, h);
            return send("GET", "/api/v1/jobs", null, null, null, Map.of("Cookie", cookie));
        }, 401, "the session has ended"));

        List<DynamicTest> tests = new ArrayList<>();
        for (Case c : cases) {
            tests.add(DynamicTest.dynamicTest(c.name(), () -> {
                Reply r = c.request().get();
                assertEquals(c.status(), r.status(), c.name() + ": " + r.body());
                java.util.regex.Matcher field = java.util.regex.Pattern.compile("^([A-Za-z.]+): (.*)$").matcher(c.message());
                if (c.status() == 400 && r.body().contains("\"problems\"") && field.matches()) { // the problem of that field
                    boolean found = false;
                    for (JsonNode p : r.json().path("problems")) {
                        found |= p.path("path").asText().equals(field.group(1)) && p.path("message").asText().contains(field.group(2));
                    }
                    assertTrue(found, c.name() + ": expected a problem at " + field.group(1) + " saying '" + field.group(2) + "' in " + r.body());
                } else {
                    assertTrue(r.body().contains(c.message()), c.name() + ": expected '" + c.message() + "' in " + r.body());
                }
                assertFalse(r.body().contains("Exception") || r.body().contains("\tat "), "no stack trace: " + r.body());
            }));
        }
        assertTrue(cases.size() >= 60, "cases: " + cases.size());
        return tests;
    }

    /** A runner's registration as a runner sends it, with the backends given. */
    /** A runner's outcome with one well-formed ort-cpu result, {@code from} replaced by {@code to} in it. */
    static String result(String from, String to) {
        String r = "{\"results\": [{\"backend\": \"ort-cpu\", \"device\": \"host\", \"bundleRootDigest\": null, \"promptLength\": 64, "
                + "\"newTokens\": 32, \"loadSeconds\": 1.0, \"timeToFirstTokenMs\": 50.0, \"prefillTokensPerSecond\": 1000.0, "
                + "\"decodeTokensPerSecond\": 12.5, \"peakRssBytes\": 1000000, \"weightBytesPerToken\": 2000000, "
                + "\"memoryBandwidthBytesPerSecond\": null, \"bandwidthSource\": null, \"efficiency\": null, \"tokenAgreement\": 1.0, "
                + "\"perplexity\": null, \"referencePerplexity\": null, \"opsOffNpu\": null, \"opTimingsMs\": null, "
                + "\"joulesPerToken\": null, \"thermalState\": null, \"notAvailable\": {}}], \"error\": null}";
        return from.isEmpty() ? r : r.replace(from, to);
    }

    static String registration(String backends) {
        return "{\"soc\": null, \"htpArch\": null, \"backends\": " + backends + ", \"ramBytes\": 0, \"os\": \"linux\", "
                + "\"onnxRuntime\": \"1\", \"qnnSdk\": null}";
    }

    static String readAdmin() {
        try {
            return Files.readString(Standalone.tokenFile(home)).strip();
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }

    /** Signs in as the dashboard's login form does, from its own page, and returns the session cookie ("name=value"). */
    static String signIn(String token, Map<String, String> headers) {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(gateway + "/ui/session"))
                .header("Content-Type", "application/x-www-form-urlencoded").POST(HttpRequest.BodyPublishers.ofString("token=" + token));
        headers.forEach(b::header);
        try {
            HttpResponse<String> r = HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString());
            assertEquals(302, r.statusCode(), r.body());
            assertEquals(gateway + "/", r.headers().firstValue("Location").orElseThrow());
            String cookie = r.headers().firstValue("Set-Cookie").orElseThrow();
            assertTrue(cookie.startsWith("hexforge_session=hxs_") && !cookie.contains(token), "a session secret, never the token: " + cookie);
            return cookie.substring(0, cookie.indexOf(';'));
        } catch (java.io.IOException | InterruptedException e) {
            throw new AssertionError(e);
        }
    }

    /** The four security headers on the dashboard, the API, refusals and the artifact service alike. */
    @Test
    void everyResponseCarriesTheSecurityHeaders() throws Exception {
        List<String[]> requests = List.of(new String[]{gateway, "/"}, new String[]{gateway, "/app.js"}, new String[]{gateway, "/login.html"},
                new String[]{gateway, "/api/v1/health"}, new String[]{gateway, "/api/v1/jobs"}, new String[]{gateway, "/api;x/v1/jobs"},
                new String[]{internal, "/internal/v1/keys"});
        for (String[] r : requests) {
            HttpResponse<String> got = HTTP.send(HttpRequest.newBuilder(URI.create(r[0] + r[1])).build(), HttpResponse.BodyHandlers.ofString());
            String at = r[1] + " (" + got.statusCode() + ")";
            assertEquals(dev.hexforge.web.SecurityHeaders.POLICY, got.headers().firstValue("Content-Security-Policy").orElse(null), at);
            assertEquals("DENY", got.headers().firstValue("X-Frame-Options").orElse(null), at);
            assertEquals("nosniff", got.headers().firstValue("X-Content-Type-Options").orElse(null), at);
            assertEquals("same-origin", got.headers().firstValue("Referrer-Policy").orElse(null), at);
        }
        String page = HTTP.send(HttpRequest.newBuilder(URI.create(gateway + "/login.html")).build(), HttpResponse.BodyHandlers.ofString()).body();
        assertFalse(page.contains("<script>") || page.contains("style="), "no inline script or style: " + page);
    }

    @Test
    void aRemovedDeviceIsLockedOutAtOnceAndPollsOneAtATime() throws Exception {
        String token = send("POST", "/api/v1/devices", "{\"name\": \"revoked\"}", "application/json", mallory).json().path("token").asText();
        assertEquals(200, send("POST", "/api/v1/runner/register", registration("[\"ort-cpu\"]"), "application/json", token).status());
        CompletableFuture<Reply> first = CompletableFuture.supplyAsync(() -> send("GET", "/api/v1/runner/tasks/next?wait=3", null, null, token));
        Thread.sleep(500);
        Reply second = send("GET", "/api/v1/runner/tasks/next?wait=1", null, null, token);
        assertEquals(409, second.status(), second.body());
        assertTrue(second.body().contains("a poll of this device is already waiting"), second.body());
        assertEquals(204, first.get().status());
        String id = null;
        for (JsonNode d : send("GET", "/api/v1/devices", null, null, mallory).json().path("devices")) {
            if (d.path("name").asText().equals("revoked")) {
                id = d.path("id").asText();
            }
        }
        assertEquals(200, send("DELETE", "/api/v1/devices/" + id, null, null, mallory).status());
        Reply after = send("POST", "/api/v1/runner/heartbeat", null, null, token);
        assertEquals(401, after.status(), after.body());
        assertTrue(after.body().contains("invalid device token"), after.body());
    }

    @Test
    void secretsAreCreatedPrivateAndNoArtifactHoldsOne() throws Exception {
        Map<String, String> secrets = new LinkedHashMap<>();
        try (var files = Files.list(home.resolve("secrets"))) {
            for (Path f : files.toList()) {
                assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(f)), f.toString());
                String text = Files.readString(f).strip();
                // the signing key's base64 body, the other secrets whole
                secrets.put(f.getFileName().toString(), text.contains("-----") ? text.lines().filter(l -> !l.startsWith("-----"))
                        .findFirst().orElseThrow() : text);
            }
        }
        assertTrue(secrets.keySet().containsAll(List.of("api-token", "device-token", "internal-token", "s3-secret", "signing-key.pem")), secrets.keySet().toString());
        // a sign-only job over a tenant's own folder of the models folder holding copies of nothing secret, and the attacks above
        Path own = Standalone.modelsFolder(home).resolve("mine");
        dev.hexforge.io.Folders.copyTree(Fixtures.qwen2Tiny(), own);
        JsonNode job = finish(submit("{\"model\": " + q(own) + ", \"stages\": [\"sign\"]}", mallory).json().path("id").asText(), mallory);
        assertEquals("completed", job.path("state").asText(), job.toString());
        int scanned = 0;
        for (String[] owner : new String[][]{{alice, aliceJob}, {mallory, job.path("id").asText()}}) {
            for (JsonNode a : send("GET", "/api/v1/artifacts?job=" + owner[1], null, null, owner[0]).json().path("artifacts")) {
                JsonNode detail = send("GET", "/api/v1/artifacts/" + a.path("id").asText(), null, null, owner[0]).json();
                List<String> files = new ArrayList<>();
                detail.path("files").forEach(f -> files.add(f.path("path").asText()));
                files.add("model.sig");
                for (String f : files) {
                    Reply redirect = send("GET", "/api/v1/artifacts/" + a.path("id").asText() + "/download?path="
                            + java.net.URLEncoder.encode(f, StandardCharsets.UTF_8), null, null, owner[0]);
                    assertEquals(302, redirect.status(), redirect.body());
                    byte[] bytes = HTTP.send(HttpRequest.newBuilder(URI.create(redirect.json().path("url").asText())).build(),
                            HttpResponse.BodyHandlers.ofByteArray()).body();
                    String text = new String(bytes, StandardCharsets.ISO_8859_1);
                    secrets.forEach((name, value) -> assertFalse(text.contains(value), name + " found in " + f));
                    scanned++;
                }
            }
        }
        assertTrue(scanned > 10, "files scanned: " + scanned);
    }

    @Test
    void aModelNoStageServiceCanHoldIsRefusedAtSubmissionWithTheEstimate() throws Exception {
        // the config of Qwen2.5-7B (the gateway reads only config.json to plan): more than this test fleet's heap
        Path big = Files.createDirectories(Standalone.modelsFolder(home).resolve("qwen2.5-7b-config-only"));
        com.fasterxml.jackson.databind.node.ObjectNode config = (com.fasterxml.jackson.databind.node.ObjectNode)
                JSON.readTree(Fixtures.qwen2Tiny().resolve("config.json").toFile());
        config.put("hidden_size", 3584).put("intermediate_size", 18944).put("num_hidden_layers", 28).put("num_attention_heads", 28)
                .put("num_key_value_heads", 4).put("vocab_size", 152064).put("max_position_embeddings", 32768);
        JSON.writeValue(big.resolve("config.json").toFile(), config);
        Reply r = submit("{\"model\": " + q(big) + ", \"stages\": [\"quantize\", \"export\"]}", mallory);
        assertEquals(400, r.status(), r.body());
        JsonNode problem = r.json().path("problems").get(0);
        assertEquals("quantize", problem.path("path").asText(), r.body());
        assertTrue(problem.path("message").asText().matches("quantize needs about [0-9]+\\.[0-9] GB of memory for this model \\(rtn by layer: "
                + ".*; this fleet's quantize services can have [0-9.]+ GB \\((as they report it|hexforge.worker-memory)\\)"), r.body());
        assertEquals(1, r.json().path("problems").size(), "export streams: it fits");
    }

    @Test
    void aSignOnlyJobOverAnUploadSaysTheFleetDidNotBuildIt() throws Exception {
        Reply r = send("GET", "/api/v1/artifacts/" + aliceArtifact + "/download?path=provenance.sig", null, null, alice);
        assertEquals(302, r.status(), r.body());
        String envelope = HTTP.send(HttpRequest.newBuilder(URI.create(r.json().path("url").asText())).build(),
                HttpResponse.BodyHandlers.ofString()).body();
        JsonNode bundle = JSON.readTree(envelope);
        JsonNode payload = bundle.has("payload") ? bundle.get("payload") : bundle.path("dsseEnvelope").path("payload");
        String statement = new String(java.util.Base64.getDecoder().decode(payload.asText()), StandardCharsets.UTF_8);
        assertTrue(statement.contains("uploaded by tenant alice (upload " + aliceUpload + "), not built by the fleet"), statement);
    }

    @Test
    void presignedUrlsCannotBeBentToAnotherObject() throws Exception {
        Reply r = send("GET", "/api/v1/artifacts/" + aliceArtifact + "/download?path=config.json", null, null, alice);
        assertEquals(302, r.status(), r.body());
        String url = r.json().path("url").asText();
        int at = url.indexOf("objects/") + "objects/".length();
        String other = url.substring(0, at) + "0".repeat(64) + url.substring(url.indexOf('?'));
        HttpResponse<String> bent = HTTP.send(HttpRequest.newBuilder(URI.create(other)).build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(403, bent.statusCode(), bent.body());
    }

    @Test
    void aDataUploadNamedByIdIsReadByTheStage() throws Exception {
        // alice's finetune on her uploaded data: the stage fetches it by id (the fleet reads no path of hers)
        JsonNode job = finish(submit("{\"model\": {\"upload\": \"" + aliceUpload + "\"}, \"stages\": [\"finetune\"], \"finetune\": {\"data\": "
                + "{\"upload\": \"" + aliceDataUpload + "\"}, \"batch\": 8, \"accumulation\": 1, \"epochs\": 1, \"maxLength\": 64}}", alice)
                .json().path("id").asText(), alice);
        assertEquals("completed", job.path("state").asText(), job.toString());
    }
}
