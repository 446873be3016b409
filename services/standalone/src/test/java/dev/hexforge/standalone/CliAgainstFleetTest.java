package dev.hexforge.standalone;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.hexforge.cli.Main;
import dev.hexforge.infra.EmbeddedInfra;
import dev.hexforge.store.ArtifactStore;
import dev.hexforge.testing.Fixtures;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The standalone fleet started as `hexforge up` does, driven by the CLI's job commands as a user would. */
@org.junit.jupiter.api.Tag("fleet")
class CliAgainstFleetTest {
    @TempDir
    static Path home;
    static Standalone fleet;


    @BeforeAll
    static void up() throws Exception {
        fleet = start(home);
    }

    @AfterAll
    static void down() {
        stop(fleet);
    }

    /** A standalone fleet in {@code home}, the CLI's commands pointed at it with its first API token. */
    static Standalone start(Path home) throws Exception {
        Standalone started = Standalone.start(home, EmbeddedInfra.Ports.anyFree(), 0);
        System.setProperty("hexforge.url", started.gatewayUrl());
        System.setProperty("hexforge.token", Files.readString(Standalone.tokenFile(home)).strip());
        return started;
    }

    static void stop(Standalone fleet) {
        System.clearProperty("hexforge.url");
        System.clearProperty("hexforge.token");
        if (fleet != null) {
            fleet.close();
        }
    }

    record Run(int exit, String out, String err) {
    }

    static Run cli(String... args) {
        PrintStream oldOut = System.out;
        PrintStream oldErr = System.err;
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        try {
            System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
            System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
            int code = Main.run(args);
            return new Run(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
        } finally {
            System.setOut(oldOut);
            System.setErr(oldErr);
        }
    }

    @Test
    void submitWatchAndShowAJob() throws Exception {
        Path spec = home.resolve("job.yaml");
        Files.writeString(spec, "name: cli test\nmodel:\n  path: " + Fixtures.qwen2Tiny() + "\nstages: [export, sign]\nexport:\n  variant: dynamic\n");
        Run r = cli("submit", spec.toString(), "--watch", "--json");
        assertEquals(0, r.exit(), r.err());
        JsonNode job = new ObjectMapper().readTree(r.out());
        assertEquals("completed", job.path("state").asText());
        assertEquals("onnx-dynamic", job.path("stages").get(0).path("outputs").get(0).path("kind").asText());
        Run watch = cli("watch", job.path("id").asText());
        assertEquals(0, watch.exit(), watch.err());
        assertTrue(watch.err().contains("job " + job.path("id").asText() + ": completed"), "a finished job's stream: " + watch.err());
        Run show = cli("job", job.path("id").asText());
        assertEquals(0, show.exit());
        assertTrue(show.out().contains("\"state\" : \"completed\""), show.out());
        Run cancel = cli("job", job.path("id").asText(), "--cancel");
        assertEquals(1, cancel.exit());
        assertTrue(cancel.err().contains("409") && cancel.err().contains("only running jobs can be cancelled"), cancel.err());

        String artifact = job.path("stages").get(1).path("outputs").get(0).path("id").asText();
        Path out = home.resolve("downloaded");
        Run download = cli("download", artifact, "--out", out.toString());
        assertEquals(0, download.exit(), download.err());
        assertTrue(download.out().contains("verified") && download.out().contains("provenance verified"), download.out());
        Path pub = home.resolve("fleet.pub.pem");
        Files.writeString(pub, dev.hexforge.signing.Keys.publicPem(dev.hexforge.signing.Keys.publicOf(
                dev.hexforge.signing.Keys.readPrivate(Standalone.signingKey(home)))));
        Run verify = cli("verify", out.toString(), "--key", pub.toString(), "--provenance");
        assertEquals(0, verify.exit(), verify.err());
        assertTrue(verify.out().contains("export/onnx-dynamic"), "the provenance names the export: " + verify.out());
        Run again = cli("download", artifact, "--out", out.toString());
        assertEquals(1, again.exit());
        assertTrue(again.err().contains("already exists"), again.err());

        Path work = home.resolve("runner");
        assertEquals(0, dev.hexforge.devicerunner.Main.run("run", artifact, "--work", work.toString(), "--new-tokens", "4"),
                "the device-runner fetches, verifies and benchmarks the signed artifact");
        try (var left = Files.list(work)) {
            assertEquals(0, left.count(), "the runner cleans up after itself");
        }
    }

    @Test
    void finetuneMergeAndExportRunAsOneJobWithLiveMetrics() throws Exception {
        Path data = Fixtures.loraTaskLines(96, Standalone.modelsFolder(home).resolve("task.jsonl"));
        Path spec = home.resolve("finetune.yaml");
        Files.writeString(spec, "name: finetune test\nmodel:\n  path: " + Fixtures.qwen2Tiny() + "\n"
                + "stages: [finetune, merge, export]\n"
                + "finetune:\n  data: " + data + "\n  evalData: " + Fixtures.root().resolve("lora-task/eval.json") + "\n"
                + "  learningRate: 0.005\n  batch: 16\n  accumulation: 1\n  epochs: 2\n"
                + "export:\n  variant: dynamic\n");
        Run r = cli("submit", spec.toString(), "--watch");
        assertEquals(0, r.exit(), r.err());
        assertTrue(r.err().contains("finetune  [") && r.err().contains("loss=") && r.err().contains("merge     completed: [hf-model]"),
                "live progress from the job's event stream: " + r.err());
        String id = r.out().lines().filter(l -> l.startsWith("job ")).findFirst().orElseThrow().split("[ :]")[1];
        JsonNode job = new ObjectMapper().readTree(cli("job", id).out());
        assertEquals("completed", job.path("state").asText(), r.out());
        JsonNode finetune = job.path("stages").get(0);
        assertEquals("lora-adapter", finetune.path("outputs").get(0).path("kind").asText());
        assertEquals(12, finetune.path("report").path("steps").asInt(), "96 examples / 16 = 6 steps per epoch");
        assertTrue(finetune.path("report").path("evalLoss").asDouble() < 6.0, finetune.toString());
        JsonNode metrics = finetune.path("metrics");
        assertTrue(metrics.has("loss") && metrics.has("learningRate") && metrics.has("tokensPerSecond")
                && metrics.has("evalLoss") && metrics.has("exactMatch"), "live metrics kept by the gateway: " + metrics);
        assertEquals("hf-model", job.path("stages").get(1).path("outputs").get(0).path("kind").asText());
        assertEquals(16, job.path("stages").get(1).path("report").path("mergedLinears").asInt());
        assertEquals("onnx-dynamic", job.path("stages").get(2).path("outputs").get(0).path("kind").asText());

        // the CLI with the same settings runs the same passes: the same adapter weights and merged model, byte for byte
        Path adapter = home.resolve("cli-adapter");
        Run ft = cli("finetune", "--model", Fixtures.qwen2Tiny().toString(), "--data", data.toString(), "--eval",
                Fixtures.root().resolve("lora-task/eval.json").toString(), "--lr", "0.005", "--batch", "16", "--accum", "1",
                "--epochs", "2", "--out", adapter.toString(), "--json");
        assertEquals(0, ft.exit(), ft.err());
        // the adapter: every file the same but the training report, which records this run's time and speed
        ArtifactStore s3 = new ArtifactStore(fleet.infra().s3().endpoint(), fleet.infra().s3().accessKey(), fleet.s3Secret());
        java.util.List<ArtifactStore.Entry> stored = s3.manifest(sha(job, 0, 0)).stream()
                .filter(e -> !e.path().equals(dev.hexforge.lora.train.LoraTrainer.REPORT)).toList();
        assertTrue(stored.stream().anyMatch(e -> e.path().endsWith(".safetensors")), stored.toString());
        for (ArtifactStore.Entry e : stored) {
            assertEquals(e.sha256(), dev.hexforge.signing.FolderHasher.sha256(adapter.resolve(e.path())), "finetune: " + e.path());
        }
        Path merged = home.resolve("cli-merged");
        assertEquals(0, cli("merge", "--model", Fixtures.qwen2Tiny().toString(), "--adapter", adapter.toString(), "--out",
                merged.toString()).exit(), "merge");
        assertEquals(sha(job, 1, 0), ArtifactStore.digest(merged), "merge: CLI and fleet give the same bytes");
    }

    /** The stored digest of output {@code output} of stage {@code stage} of a job. */
    private static String sha(JsonNode job, int stage, int output) {
        return job.path("stages").get(stage).path("outputs").get(output).path("sha256").asText();
    }

    private JsonNode runJob(String name, String yaml) throws Exception {
        Path spec = Files.writeString(home.resolve(name + ".yaml"), "name: " + name + "\nmodel:\n  path: " + Fixtures.qwen2Tiny()
                + "\n" + yaml);
        Run r = cli("submit", spec.toString(), "--watch", "--json");
        assertEquals(0, r.exit(), r.err() + r.out());
        JsonNode job = new ObjectMapper().readTree(r.out());
        assertEquals("completed", job.path("state").asText(), r.out());
        return job;
    }

    @Test
    void quantizeExportAndCompileGiveTheSameBytesFromTheCliAsFromTheFleet() throws Exception {
        // RTN, INT8 per channel, both formats, static graphs, compiled for ort-qnn
        String rtnYaml = "stages: [quantize, export, compile, sign]\nquantize:\n  method: rtn\n  bits: 8\n"
                + "  group: 0\n  format: both\nexport:\n  variant: static\n  seq: 16\n  ctx: 64\n";
        JsonNode rtn = runJob("parity-rtn", rtnYaml);
        Path q = home.resolve("cli-rtn");
        Run r = cli("quantize", "--model", Fixtures.qwen2Tiny().toString(), "--method", "rtn", "--bits", "8", "--format", "both",
                "--variant", "static", "--seq", "16", "--ctx", "64", "--out", q.toString());
        assertEquals(0, r.exit(), r.err());
        assertEquals(sha(rtn, 0, 0), ArtifactStore.digest(q.resolve("checkpoint")), "quantized checkpoint");
        assertEquals("onnx-static-qdq", rtn.path("stages").get(1).path("outputs").get(0).path("kind").asText());
        assertEquals(sha(rtn, 1, 0), ArtifactStore.digest(q.resolve("qdq")), "QDQ export");
        assertEquals("onnx-static-matmulnbits", rtn.path("stages").get(1).path("outputs").get(1).path("kind").asText());
        assertEquals(sha(rtn, 1, 1), ArtifactStore.digest(q.resolve("matmulnbits")), "MatMulNBits export of format both");
        Path bundle = home.resolve("cli-bundle");
        Run c = cli("compile", "--model", q.resolve("qdq").toString(), "--out", bundle.toString(), "--json");
        assertEquals(0, c.exit(), c.err());
        assertEquals(sha(rtn, 2, 0), ArtifactStore.digest(bundle), "ort-qnn bundle");

        // sign: signatures are randomised, so the same content, the same provenance facts, and both verify under one key
        Path signed = home.resolve("cli-signed");
        dev.hexforge.io.Folders.copyTree(bundle, signed);
        Path spec = Files.writeString(home.resolve("parity-rtn-cli.yaml"), "name: parity-rtn\nmodel:\n  path: "
                + Fixtures.qwen2Tiny() + "\n" + rtnYaml);
        Path key = Standalone.signingKey(home);
        assertEquals(0, cli("sign", signed.toString(), "--key", key.toString(), "--provenance", "--spec", spec.toString(),
                "--material", "base-model:" + Fixtures.qwen2Tiny() + "=" + Fixtures.qwen2Tiny()).exit(), "CLI sign");
        Path fromFleet = home.resolve("fleet-signed");
        Run dl = cli("download", rtn.path("stages").get(3).path("outputs").get(0).path("id").asText(), "--out", fromFleet.toString());
        assertEquals(0, dl.exit(), "the fleet's signed bundle downloads and verifies: " + dl.err());
        java.security.PublicKey fleetKey = dev.hexforge.signing.Keys.publicOf(dev.hexforge.signing.Keys.readPrivate(key));
        JsonNode cliFacts = dev.hexforge.signing.Provenance.verify(signed, fleetKey);
        JsonNode fleetFacts = dev.hexforge.signing.Provenance.verify(fromFleet, fleetKey);
        assertEquals(fleetFacts.path("subject").path(0).path("digest"), cliFacts.path("subject").path(0).path("digest"),
                "the provenance of both names the same bundle");
        assertEquals(fleetFacts.at("/predicate/runDetails/builder/version"), cliFacts.at("/predicate/runDetails/builder/version"),
                "the same tool versions");
        assertEquals(fleetFacts.at("/predicate/buildDefinition/externalParameters"), cliFacts.at("/predicate/buildDefinition/externalParameters"),
                "the same job spec");
        JsonNode base = cliFacts.at("/predicate/buildDefinition/resolvedDependencies/0");
        assertTrue(fleetFacts.at("/predicate/buildDefinition/resolvedDependencies").toString().contains(base.path("digest").path("sha256").asText()),
                "the same base model digest: " + fleetFacts + " / " + base);
        Path pub = Files.writeString(home.resolve("fleet.pub.pem"), dev.hexforge.signing.Keys.publicPem(fleetKey));
        assertEquals(0, cli("verify", signed.toString(), "--key", pub.toString(), "--provenance").exit(), "the CLI's model signature");

        // GPTQ and AWQ, INT4 in groups, on the same calibration sample
        String calib = "  calibrationSamples: 16\n  calibrationLength: 128\n";
        JsonNode gptq = runJob("parity-gptq", "stages: [quantize, export]\nquantize:\n  method: gptq\n  bits: 4\n  group: 32\n"
                + calib + "  format: matmulnbits\nexport:\n  variant: dynamic\n");
        Path g = home.resolve("cli-gptq");
        r = cli("quantize", "--model", Fixtures.qwen2Tiny().toString(), "--method", "gptq", "--bits", "4", "--group", "32",
                "--samples", "16", "--calib-len", "128", "--format", "matmulnbits", "--variant", "dynamic", "--out", g.toString());
        assertEquals(0, r.exit(), r.err());
        assertEquals(sha(gptq, 1, 0), ArtifactStore.digest(g.resolve("onnx-model")), "GPTQ MatMulNBits export");
        JsonNode awq = runJob("parity-awq", "stages: [quantize, export]\nquantize:\n  method: awq\n  bits: 4\n  group: 32\n"
                + calib + "  format: qdq\nexport:\n  variant: dynamic\n");
        Path w = home.resolve("cli-awq");
        r = cli("quantize", "--model", Fixtures.qwen2Tiny().toString(), "--method", "awq", "--bits", "4", "--group", "32",
                "--samples", "16", "--calib-len", "128", "--format", "qdq", "--variant", "dynamic", "--out", w.toString());
        assertEquals(0, r.exit(), r.err());
        assertEquals(sha(awq, 1, 0), ArtifactStore.digest(w.resolve("onnx-model")), "AWQ QDQ export");

        // the float model, dynamic
        JsonNode plain = runJob("parity-export", "stages: [export]\nexport:\n  variant: dynamic\n");
        Path e = home.resolve("cli-export");
        assertEquals(0, cli("export", "--model", Fixtures.qwen2Tiny().toString(), "--variant", "dynamic", "--out", e.toString()).exit());
        assertEquals(sha(plain, 0, 0), ArtifactStore.digest(e), "float dynamic export");
    }

    @Test
    void badTrainingDataFailsTheFinetuneStageNamingTheLine() throws Exception {
        Path data = Standalone.modelsFolder(home).resolve("broken.jsonl");
        Files.writeString(data, "{\"instruction\": \"a\", \"output\": \"b\"}\n{\"instruction\": \"a\"}\n");
        Path spec = home.resolve("broken.yaml");
        Files.writeString(spec, "model:\n  path: " + Fixtures.qwen2Tiny() + "\nstages: [finetune]\nfinetune:\n  data: " + data + "\n");
        Run r = cli("submit", spec.toString(), "--watch", "--json");
        JsonNode job = new ObjectMapper().readTree(r.out());
        assertEquals("failed", job.path("state").asText(), r.out());
        assertEquals("DATA_INVALID", job.path("error").path("code").asText(), r.out());
        assertTrue(job.path("error").path("message").asText().contains("line 2: missing field 'output'"), r.out());
    }

    @Test
    void aBadSpecListsEveryProblem() throws Exception {
        Path spec = home.resolve("bad.json");
        Files.writeString(spec, "{\"model\": {\"path\": \"/m\"}, \"quantize\": {\"bits\": 1}, \"colour\": \"red\"}");
        Run r = cli("submit", spec.toString());
        assertEquals(1, r.exit());
        assertTrue(r.err().contains("400") && r.err().contains("quantize.bits: must be between 2 and 8")
                && r.err().contains("colour: unknown field"), r.err());
    }

    @Test
    void aModelFolderIsUploadedAndAJobRunsOnIt() throws Exception {
        Run up = cli("upload", Fixtures.qwen2Tiny().toString(), "--json");
        assertEquals(0, up.exit(), up.err());
        JsonNode upload = new ObjectMapper().readTree(up.out());
        assertEquals("tar.gz", upload.path("format").asText());
        assertTrue(upload.path("files").asInt() >= 4, upload.toString());
        Path spec = home.resolve("uploaded.yaml");
        Files.writeString(spec, "model:\n  upload: " + upload.path("id").asText() + "\nstages: [export]\nexport:\n  variant: dynamic\n");
        Run r = cli("submit", spec.toString(), "--watch", "--json");
        assertEquals(0, r.exit(), r.err() + r.out());
        assertEquals("completed", new ObjectMapper().readTree(r.out()).path("state").asText());
    }

    @Test
    void cancellingARunningFinetuneFreesItsServiceWithinTenSeconds() throws Exception {
        Path data = Fixtures.loraTaskLines(64, Standalone.modelsFolder(home).resolve("cancel.jsonl"));
        java.util.function.IntFunction<String> spec = epochs -> "model:\n  path: " + Fixtures.qwen2Tiny() + "\nstages: [finetune]\n"
                + "finetune:\n  data: " + data + "\n  evalData: " + Fixtures.root().resolve("lora-task/eval.json") + "\n"
                + "  batch: 16\n  accumulation: 1\n  epochs: " + epochs + "\n";
        Path longSpec = Files.writeString(home.resolve("long.yaml"), spec.apply(1000));
        Run submitted = cli("submit", longSpec.toString(), "--json");
        assertEquals(0, submitted.exit(), submitted.err());
        String id = new ObjectMapper().readTree(submitted.out()).path("id").asText();
        long deadline = System.nanoTime() + 60_000_000_000L;
        while (System.nanoTime() < deadline) {
            JsonNode job = new ObjectMapper().readTree(cli("job", id).out());
            if (job.path("stages").path(0).path("metrics").has("loss")) {
                break;
            }
            Thread.sleep(100);
        }
        Run cancel = cli("job", id, "--cancel");
        assertEquals(0, cancel.exit(), cancel.err());
        long cancelledAt = System.nanoTime();

        Path shortSpec = Files.writeString(home.resolve("short.yaml"), spec.apply(1));
        String next = new ObjectMapper().readTree(cli("submit", shortSpec.toString(), "--json").out()).path("id").asText();
        String state = "";
        while (System.nanoTime() - cancelledAt < 10_000_000_000L) {
            state = new ObjectMapper().readTree(cli("job", next).out()).path("stages").path(0).path("state").asText();
            if (state.equals("running") || state.equals("completed")) {
                break;
            }
            Thread.sleep(100);
        }
        assertTrue(state.equals("running") || state.equals("completed"),
                "the finetune service takes the next job within 10 s of the cancel, so the cancelled run stopped; it is " + state);
        assertEquals("cancelled", new ObjectMapper().readTree(cli("job", id).out()).path("state").asText());
    }

    @Test
    void theAdminTokenCreatesATenantsTokenWhichCanNeitherCrossTenantsNorOutliveItsRevocation() throws Exception {
        Run created = cli("token", "create", "--tenant", "acme", "--name", "ci", "--json");
        assertEquals(0, created.exit(), created.err());
        JsonNode t = new ObjectMapper().readTree(created.out());
        String acme = t.path("token").asText();
        assertTrue(acme.startsWith("hxf_"));
        String admin = System.getProperty("hexforge.token");
        try {
            System.setProperty("hexforge.token", acme);
            Run jobs = cli("token", "list");
            assertEquals(0, jobs.exit(), jobs.err());
            assertTrue(jobs.out().contains("acme") && !jobs.out().contains("default"), "a tenant sees its own tokens: " + jobs.out());
            Run cross = cli("token", "create", "--tenant", "someone-else");
            assertEquals(1, cross.exit());
            assertTrue(cross.err().contains("403") && cross.err().contains("admin"), cross.err());
            String id = jobs.out().lines().filter(l -> l.contains(" ci ")).findFirst().orElseThrow().split(" ")[0];
            System.setProperty("hexforge.token", admin);
            assertEquals(0, cli("token", "revoke", id).exit());
            System.setProperty("hexforge.token", acme);
            Run after = cli("token", "list");
            assertEquals(1, after.exit());
            assertTrue(after.err().contains("401"), after.err());
        } finally {
            System.setProperty("hexforge.token", admin);
        }
    }

    @Test
    void anInt8ModelIsCompiledToAnOrtQnnBundleAndSdkTargetsWithoutAnSdkAreRefusedUpFront() throws Exception {
        Path spec = Files.writeString(home.resolve("compile.yaml"), "model:\n  path: " + Fixtures.qwen2Tiny() + "\n"
                + "stages: [quantize, export, compile]\nquantize:\n  method: rtn\n  bits: 8\n  group: 0\n"
                + "export:\n  variant: static\n  seq: 32\n  ctx: 128\ncompile:\n  target: ort-qnn\n  soc: SM8550\n");
        Run r = cli("submit", spec.toString(), "--watch", "--json");
        assertEquals(0, r.exit(), r.err() + r.out());
        JsonNode compile = new ObjectMapper().readTree(r.out()).path("stages").get(2);
        assertEquals("ort-qnn-bundle", compile.path("outputs").get(0).path("kind").asText());
        assertEquals(73, compile.path("report").path("htpArch").asInt(), "v73 from the SoC table: " + compile.path("report"));
        assertEquals("qdq", compile.path("report").path("linearFormat").asText());
        assertFalse(compile.path("report").path("quantizedIo").asBoolean());

        // the same with quantized inputs and outputs: the manifest gives each graph's boundary encodings
        Path io = Files.writeString(home.resolve("compile-io.yaml"), Files.readString(spec).replace("  group: 0\n",
                "  group: 0\n  quantizeIo: true\n"));
        Run ioRun = cli("submit", io.toString(), "--watch", "--json");
        assertEquals(0, ioRun.exit(), ioRun.err() + ioRun.out());
        JsonNode ioReport = new ObjectMapper().readTree(ioRun.out()).path("stages").get(2).path("report");
        assertTrue(ioReport.path("quantizedIo").asBoolean(), ioReport.toString());
        JsonNode tokenIo = ioReport.path("graphs").path("token").path("quantizedIo");
        assertEquals("uint8", tokenIo.path("past_key_values.0.key").path("type").asText(), tokenIo.toString());
        assertEquals("uint16", tokenIo.path("logits").path("type").asText(), tokenIo.toString());

        Path sdk = Files.writeString(home.resolve("sdk.yaml"), Files.readString(spec).replace("target: ort-qnn", "target: qnn-context-binary"));
        Run refused = cli("submit", sdk.toString());
        assertEquals(1, refused.exit());
        assertTrue(refused.err().contains("400") && refused.err().contains("QNN_SDK_ROOT"), refused.err());
    }

    @Test
    void theLocalRunnerBenchmarksTheSignedBundleAndRefusesATamperedOne() throws Exception {
        Run devices = cli("device", "list");
        for (int i = 0; i < 100 && !devices.out().contains("ort-cpu"); i++) { // the runner registers as the fleet comes up
            Thread.sleep(200);
            devices = cli("device", "list");
        }
        assertTrue(devices.out().contains("local") && devices.out().contains("online") && devices.out().contains("ort-cpu"),
                "standalone's own runner: " + devices.out());
        String pipeline = "model:\n  path: " + Fixtures.qwen2Tiny() + "\nstages: [quantize, export, compile, sign, benchmark]\n"
                + "quantize:\n  method: rtn\n  bits: 8\n  group: 0\nexport:\n  variant: static\n  seq: 32\n  ctx: 128\n"
                + "benchmark:\n  promptLength: 16\n  newTokens: 8\n";
        Run r = cli("submit", Files.writeString(home.resolve("bench.yaml"), pipeline).toString(), "--watch", "--json");
        assertEquals(0, r.exit(), r.err() + r.out());
        JsonNode bench = new ObjectMapper().readTree(r.out()).path("stages").get(4);
        assertEquals("benchmark", bench.path("stage").asText());
        JsonNode result = bench.path("report").path("results").get(0);
        assertEquals("ort-cpu", result.path("backend").asText(), bench.toString());
        assertEquals(1.0, result.path("tokenAgreement").asDouble(), "INT8 on the device agrees with the fake-quantized reference: " + result);
        assertTrue(result.path("decodeTokensPerSecond").asDouble() > 0 && result.path("peakRssBytes").asLong() > 0, result.toString());
        assertTrue(result.path("notAvailable").has("energyPerToken") && result.path("joulesPerToken").isNull(), "not available, not zero: " + result);
        double ppl = result.path("perplexity").asDouble();
        double refPpl = result.path("referencePerplexity").asDouble();
        assertTrue(refPpl > 1 && Math.abs(ppl - refPpl) <= 0.01 * refPpl, "on-device perplexity against the host's: " + result);
        assertTrue(result.path("efficiency").asDouble() > 0 && result.path("memoryBandwidthBytesPerSecond").asDouble() > 1e9
                && result.path("weightBytesPerToken").asLong() > 0, "the roofline: " + result);
        assertEquals("local", bench.path("report").path("device").asText());

        Path qnn = Files.writeString(home.resolve("bench-qnn.yaml"), pipeline + "  backends: [ort-qnn]\n");
        Run refused = cli("submit", qnn.toString());
        assertEquals(1, refused.exit());
        assertTrue(refused.err().contains("none of your device runners offers 'ort-qnn'"), refused.err());

        // someone changes a stored byte of the signed bundle, then its signature: the runner will not run it, and says why
        JsonNode signed = new ObjectMapper().readTree(r.out()).path("stages").get(3).path("outputs").get(0);
        dev.hexforge.store.ArtifactStore s3 = new dev.hexforge.store.ArtifactStore(fleet.infra().s3().endpoint(),
                fleet.infra().s3().accessKey(), fleet.s3Secret());
        String provenance = s3.manifest(signed.path("sha256").asText()).stream().filter(e -> e.path().equals("provenance.sig"))
                .findFirst().orElseThrow().sha256();
        String key = dev.hexforge.store.ArtifactStore.key(provenance);
        byte[] original = s3.getBytes(key);
        byte[] bytes = original.clone();
        bytes[bytes.length / 2] ^= 1;
        s3.putBytes(key, bytes, "application/octet-stream");
        String token = Files.readString(home.resolve("secrets/device-token")).strip();
        java.security.PublicKey fleetKey = dev.hexforge.signing.Keys.publicOf(dev.hexforge.signing.Keys.readPrivate(Standalone.signingKey(home)));
        JsonNode task = new ObjectMapper().readTree("{\"taskId\": \"t1\", \"artifactId\": \"" + signed.path("id").asText()
                + "\", \"backends\": [\"ort-cpu\"], \"promptLength\": 8, \"newTokens\": 2}");
        // a runner pinned to another key refuses the bundle, whatever keys the gateway lists
        dev.hexforge.devicerunner.RunnerLoop elsewhere = new dev.hexforge.devicerunner.RunnerLoop(
                new dev.hexforge.client.GatewayClient(fleet.gatewayUrl(), token), Files.createDirectories(home.resolve("runner-other")),
                dev.hexforge.devicerunner.DeviceProfile.host(1, null), java.util.List.of(dev.hexforge.signing.Keys.generate().getPublic()));
        String untrusted = String.valueOf(elsewhere.execute(task).get("error"));
        assertTrue(untrusted.contains("which is not among the keys this runner trusts"), untrusted);
        dev.hexforge.devicerunner.RunnerLoop runner = new dev.hexforge.devicerunner.RunnerLoop(
                new dev.hexforge.client.GatewayClient(fleet.gatewayUrl(), token), Files.createDirectories(home.resolve("runner-test")),
                dev.hexforge.devicerunner.DeviceProfile.host(1, null), java.util.List.of(fleetKey));
        String refusal = String.valueOf(runner.execute(task).get("error"));
        assertTrue(refusal.contains("provenance.sig"), "a changed file is refused by name: " + refusal);
        s3.putBytes(key, original, "application/octet-stream");

        JsonNode detail = new ObjectMapper().readTree(new dev.hexforge.client.GatewayClient(fleet.gatewayUrl(), token)
                .send("GET", "/api/v1/artifacts/" + signed.path("id").asText(), null, null).body().toString());
        String sigKey = "signatures/" + signed.path("sha256").asText() + "/" + detail.path("signature").path("keyHint").asText() + "/model.sig";
        byte[] sig = s3.getBytes(sigKey);
        String text = new String(sig, java.nio.charset.StandardCharsets.UTF_8);
        int at = text.indexOf("\"sig\"") + 10;
        String forged = text.substring(0, at) + (text.charAt(at) == 'A' ? 'B' : 'A') + text.substring(at + 1);
        s3.putBytes(sigKey, forged.getBytes(java.nio.charset.StandardCharsets.UTF_8), "application/json");
        refusal = String.valueOf(runner.execute(task).get("error"));
        assertTrue(refusal.contains("BUNDLE_REFUSED") && refusal.contains("signature"), "a forged signature is refused: " + refusal);
        s3.putBytes(sigKey, sig, "application/json");
        assertEquals(null, runner.execute(task).get("error"), "the restored bundle runs again");
    }
}
