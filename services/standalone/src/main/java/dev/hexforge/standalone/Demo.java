package dev.hexforge.standalone;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.hexforge.checkpoint.Checkpoint;
import dev.hexforge.client.ArtifactDownloader;
import dev.hexforge.client.GatewayClient;
import dev.hexforge.eval.Perplexity;
import dev.hexforge.forward.DecoderForward;
import dev.hexforge.forward.DecoderWeights;
import dev.hexforge.generate.CausalLm;
import dev.hexforge.generate.Generator;
import dev.hexforge.generate.LogitRows;
import dev.hexforge.onnx.export.ExportInfo;
import dev.hexforge.onnx.qnn.Precision;
import dev.hexforge.onnx.qnn.QnnPreflight;
import dev.hexforge.onnx.runtime.OnnxLm;
import dev.hexforge.tokenizer.Tokenizer;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The demo: two jobs on the bundled tiny Qwen2 through the fleet (started in this JVM unless one is already up) — a
 * float static export, INT8 quantization (behind the perplexity gate) then a static QDQ export, and a LoRA
 * fine-tune through to an INT8 export — each signed with provenance, followed stage by stage, its artifact downloaded
 * through the gateway (digests and signature verified) and checked (QNN pre-flight, generation, perplexity).
 */
final class Demo {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final HttpClient HTTP = HttpClient.newHttpClient();
    private final Path out;

    Demo(String out) {
        this.out = out != null ? Path.of(out) : Standalone.home().resolve("demo")
                .resolve(LocalDateTime.now().format(DateTimeFormatter.ofPattern("yyyyMMdd-HHmmss")));
    }

    /** The folders the demo downloads its three jobs' artifacts into, under {@code --out}. */
    static final List<String> FOLDERS = List.of("onnx-static", "ort-qnn-int8-sm8650", "onnx-static-lora-int8");

    int run() throws Exception {
        Path model = StandaloneMain.hexforgeHome().resolve("fixtures/qwen2-tiny").toAbsolutePath().normalize();
        Path text = StandaloneMain.hexforgeHome().resolve("fixtures/corpus/eval.txt");
        refuseEarlierRun(out);
        Files.createDirectories(out);
        String base = "http://127.0.0.1:" + Standalone.GATEWAY_PORT;
        Standalone fleet = null;
        if (!reachable(base)) {
            long t0 = System.nanoTime();
            System.out.println("fleet    starting in this JVM (Kafka, PostgreSQL, S3, gateway, finetune, quantize, export, compile and artifact services, a local device runner)...");
            fleet = Standalone.start(Standalone.home(), Standalone.GATEWAY_PORT);
            System.out.printf("fleet    up in %.1fs at %s%n", (System.nanoTime() - t0) / 1e9, fleet.gatewayUrl());
        } else {
            System.out.println("fleet    using the one already up at " + base);
        }
        try {
            String model64 = JSON.writeValueAsString(model.toString());
            Path onnx = runJob(base, "{\"name\": \"demo: qwen2-tiny float\", \"model\": {\"path\": " + model64 + "},"
                    + " \"stages\": [\"export\", \"sign\"], \"export\": {\"variant\": \"static\", \"seq\": 128, \"ctx\": 512}}", FOLDERS.get(0));
            if (onnx == null) {
                return 1;
            }
            check(model, onnx, text);
            Path int8 = runJob(base, "{\"name\": \"demo: qwen2-tiny int8\", \"model\": {\"path\": " + model64 + "},"
                    + " \"stages\": [\"quantize\", \"export\", \"compile\", \"sign\", \"benchmark\"], \"quantize\": {\"method\": \"rtn\", \"bits\": 8, \"group\": 0},"
                    + " \"export\": {\"variant\": \"static\", \"seq\": 128, \"ctx\": 512}, \"compile\": {\"target\": \"ort-qnn\", \"soc\": \"SM8650\"},"
                    + " \"benchmark\": {\"promptLength\": 64, \"newTokens\": 32}}",
                    FOLDERS.get(1));
            if (int8 == null) {
                return 1;
            }
            check(model, int8, text);
            Path task = StandaloneMain.hexforgeHome().resolve("fixtures/lora-task").toAbsolutePath().normalize();
            Path tuned = runJob(base, "{\"name\": \"demo: qwen2-tiny LoRA on the character task, int8\", \"model\": {\"path\": "
                    + model64 + "}, \"stages\": [\"finetune\", \"merge\", \"quantize\", \"export\", \"sign\"],"
                    + " \"finetune\": {\"data\": " + JSON.writeValueAsString(task.resolve("train.json").toString())
                    + ", \"evalData\": " + JSON.writeValueAsString(task.resolve("eval.json").toString())
                    + ", \"learningRate\": 0.005, \"batch\": 16, \"accumulation\": 1, \"epochs\": 8},"
                    + " \"quantize\": {\"method\": \"rtn\", \"bits\": 8, \"group\": 0},"
                    + " \"export\": {\"variant\": \"static\", \"seq\": 128, \"ctx\": 512}}", FOLDERS.get(2));
            if (tuned == null) {
                return 1;
            }
            if (!checkTask(tuned, task.resolve("eval.json"))) {
                return 1;
            }
            System.out.println("artifacts in " + out.toAbsolutePath());
            return 0;
        } finally {
            if (fleet != null) {
                fleet.close();
            }
        }
    }

    /** Refused before anything starts: an --out that already holds a demo's downloads would fail only at the end. */
    static void refuseEarlierRun(Path out) {
        for (String folder : FOLDERS) {
            Path dir = out.resolve(folder);
            if (Files.exists(dir) || Files.exists(ArtifactDownloader.staging(dir))) {
                throw new IllegalArgumentException(out + " already holds a demo's downloads (" + folder
                        + "); choose another --out or remove it");
            }
        }
    }

    /** The fleet's API as the demo's user: the standalone bootstrap token. */
    private static GatewayClient client(String base) throws IOException {
        Path file = Standalone.tokenFile(Standalone.home());
        if (!Files.isRegularFile(file)) {
            throw new IllegalStateException("no API token at " + file + " (the fleet writes it on its first start)");
        }
        return new GatewayClient(base, Files.readString(file).strip());
    }

    private static boolean reachable(String base) {
        try {
            HTTP.send(HttpRequest.newBuilder(URI.create(base + "/api/v1/health")).timeout(Duration.ofSeconds(2)).build(),
                    HttpResponse.BodyHandlers.discarding());
            return true;
        } catch (Exception e) {
            return false;
        }
    }

    /** Runs a job through the fleet and downloads its last stage's artifact; null when the job did not complete. */
    private Path runJob(String base, String spec, String folder) throws Exception {
        JsonNode job = submitAndFollow(base, spec);
        if (!"completed".equals(job.path("state").asText())) {
            System.out.println("job      " + job.path("state").asText() + ": " + job.path("error"));
            return null;
        }
        JsonNode stages = job.path("stages");
        String precision = null;
        for (JsonNode stage : stages) {
            JsonNode report = stage.path("report");
            if (report.has("quantizedPerplexity")) {
                System.out.printf("quantize %s: ppl %.4f -> %.4f (gate %s), greedy agreement %.0f%%%n", report.path("spec").asText(),
                        report.path("floatPerplexity").asDouble(), report.path("quantizedPerplexity").asDouble(),
                        report.path("gatePassed").asBoolean() ? "passed" : "FAILED", report.path("greedyAgreement").asDouble() * 100);
                JsonNode a = report.path("activations");
                if (a.isObject()) {
                    System.out.printf("         %s static graph, every activation quantized (KV cache %d-bit, ranges from %d "
                                    + "calibration chunks): ppl %.4f -> %.4f, greedy agreement %.0f%%%n", a.path("precision").asText(),
                            a.path("kvBits").asInt(), a.path("calibrationChunks").asInt(), report.path("floatPerplexity").asDouble(),
                            a.path("perplexity").asDouble(), a.path("greedyAgreement").asDouble() * 100);
                }
            }
            if (report.has("htpArch")) {
                precision = report.path("precision").asText(null);
                System.out.printf("compile  %s bundle (%s) for %s (%s, HTP v%d): graphs %s, CPU fallback disabled%n",
                        report.path("target").asText(), precision, report.path("soc").asText(), report.path("socName").asText(),
                        report.path("htpArch").asInt(), report.path("graphs").properties().stream().map(Map.Entry::getKey).toList());
            }
            for (JsonNode b : report.path("results")) {
                System.out.printf("bench    %s on device %s, the %s bundle: load %.2f s, TTFT %.1f ms, prefill %.0f tokens/s, decode %.0f tokens/s "
                                + "(%.0f%% of the %.1f GB/s bandwidth limit), peak RSS %d MB, token agreement with the host reference %.0f%%, "
                                + "perplexity %.2f (host %.2f); not available: %s%n",
                        b.path("backend").asText(), report.path("device").asText(), precision, b.path("loadSeconds").asDouble(),
                        b.path("timeToFirstTokenMs").asDouble(), b.path("prefillTokensPerSecond").asDouble(),
                        b.path("decodeTokensPerSecond").asDouble(), b.path("efficiency").asDouble() * 100,
                        b.path("memoryBandwidthBytesPerSecond").asDouble() / 1e9, b.path("peakRssBytes").asLong() >> 20,
                        b.path("tokenAgreement").asDouble() * 100, b.path("perplexity").asDouble(),
                        b.path("referencePerplexity").asDouble(), b.path("notAvailable").properties().stream()
                                .map(Map.Entry::getKey).toList());
            }
            if (report.has("evalLoss")) {
                System.out.printf("finetune %d steps, %.0f tokens/s: eval loss %.4f, exact match %.1f%% (base model: 6.78, 0%%)%n",
                        report.path("steps").asInt(), report.path("tokensPerSecond").asDouble(),
                        report.path("evalLoss").asDouble(), report.path("exactMatch").asDouble() * 100);
            }
        }
        String artifact = null; // the last stage that made something (a benchmark makes measurements, not an artifact)
        for (JsonNode st : stages) {
            if (st.path("outputs").size() > 0) {
                artifact = st.path("outputs").get(0).path("id").asText();
            }
        }
        Path dir = out.resolve(folder);
        ArtifactDownloader.Result r = new ArtifactDownloader(client(base))
                .download(artifact, dir, null, (path, done, size) -> { });
        System.out.printf("artifact %s downloaded to %s: %d files digest-checked, signature verified (key %s...)%s%n", artifact,
                dir, r.files(), r.keyHint().substring(0, 12), r.provenance() ? ", provenance verified" : "");
        return dir;
    }

    private JsonNode submitAndFollow(String base, String spec) throws Exception {
        GatewayClient gateway = client(base);
        GatewayClient.Reply r = gateway.send("POST", "/api/v1/jobs", spec, "application/json");
        if (r.status() != 201) {
            throw new IllegalStateException("the gateway refused the demo job (" + r.status() + "): " + r.body());
        }
        String id = r.body().path("id").asText();
        System.out.println("job      " + id + " submitted: " + r.body().path("name").asText());
        Map<String, String> shown = new HashMap<>();
        long deadline = System.nanoTime() + Duration.ofMinutes(10).toNanos();
        while (System.nanoTime() < deadline) {
            JsonNode job = gateway.ok(gateway.send("GET", "/api/v1/jobs/" + id, null, null));
            for (JsonNode s : job.path("stages")) {
                int pct = (int) s.path("progress").asDouble();
                String line = String.format("stage    %-8s attempt %d %-10s [%-20s] %3d%% %s", s.path("stage").asText(),
                        s.path("attempt").asInt(), s.path("state").asText(), "=".repeat(pct / 5), pct,
                        s.path("durationMs").isNull() ? "" : s.path("durationMs").asLong() + " ms");
                if (!line.equals(shown.put(s.path("id").asText(), line))) {
                    System.out.println(line);
                }
            }
            String state = job.path("state").asText();
            if (!state.equals("running")) {
                System.out.println("job      " + state);
                return job;
            }
            Thread.sleep(200);
        }
        throw new IllegalStateException("the demo job did not finish within 10 minutes");
    }

    /**
     * The exported, quantized fine-tuned model answers the task's eval questions (greedy, exact string match); at
     * least 70% must be right, the bar for the trained adapter.
     */
    private static boolean checkTask(Path onnx, Path evalJson) throws Exception {
        JsonNode eval = JSON.readTree(evalJson.toFile());
        int n = Math.min(50, eval.size());
        int correct = 0;
        try (Tokenizer tok = Tokenizer.load(onnx); CausalLm lm = OnnxLm.open(onnx, 0, null, null, LogitRows.LAST)) {
            int end = tok.encode("<|im_end|>")[0];
            Generator.Options opt = new Generator.Options(16, true, 1.0, 0, 1.0, 0, Set.of(end));
            for (int i = 0; i < n; i++) {
                JsonNode e = eval.get(i);
                int[] prompt = tok.encode(tok.chatTemplate().userPrompt(e.path("instruction").asText() + "\n"
                        + e.path("input").asText()));
                int[] got = Generator.generate(lm, prompt, opt, null);
                if (got.length > 0 && got[got.length - 1] == end) {
                    got = Arrays.copyOf(got, got.length - 1);
                }
                if (tok.decode(got).equals(e.path("output").asText())) {
                    correct++;
                }
            }
        }
        boolean ok = correct >= 0.7 * n;
        System.out.printf("task     the exported int8 model answers %d of the first %d eval questions exactly%s%n", correct, n,
                ok ? "" : " — FAILED (at least 70% expected)");
        return ok;
    }

    private static void check(Path model, Path onnx, Path text) throws Exception {
        String recorded = ExportInfo.read(onnx).precision();
        Precision precision = Precision.recorded(recorded);
        for (String g : new String[]{"prompt.onnx", "token.onnx"}) {
            QnnPreflight.Report r = QnnPreflight.check(onnx.resolve("onnx").resolve(g), precision);
            System.out.printf("qnn      %-11s %s%n", g, !r.clean() ? r.problems() : precision != null && precision.quantizesActivations()
                    ? "clean for " + precision.id() + " (HTP ops only, fixed shapes, every activation quantized)"
                    : "clean (HTP ops only, fixed shapes" + (recorded == null ? "" : ", " + recorded) + ")");
        }
        try (Checkpoint ckpt = Checkpoint.open(model); Tokenizer tok = Tokenizer.load(model); CausalLm lm = OnnxLm.open(onnx, 0)) {
            int[] ids = tok.encode("First Citizen:\nBefore we proceed any further, hear me speak.\n\nAll:\n");
            int[] expected = Generator.generate(new DecoderForward(DecoderWeights.load(ckpt)), ids, Generator.Options.greedy(24), null);
            int[] got = Generator.generate(lm, ids, Generator.Options.greedy(24), null);
            System.out.println("generate \"" + tok.decode(got, true).replace("\n", "\\n") + "\"");
            System.out.println("         " + (Arrays.equals(got, expected) ? "identical to the float Java reference forward"
                    : "differs from the float Java reference forward (expected for a quantized model)"));
            Perplexity.Result p = Perplexity.evaluate(lm, tok.encode(Files.readString(text)), 128, null);
            System.out.printf("ppl      %.4f on eval.txt, %s (%d tokens; reference: float 90.1588, weight-only int8 RTN 90.1740)%n",
                    p.perplexity(), recorded, p.scoredTokens());
        }
    }

}
