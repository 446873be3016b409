package dev.hexforge.standalone;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.hexforge.client.ArtifactDownloader;
import dev.hexforge.client.GatewayClient;
import dev.hexforge.infra.EmbeddedInfra;
import dev.hexforge.io.Folders;
import dev.hexforge.store.ArtifactStore;
import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveOutputStream;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.lang.management.CompilationMXBean;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;

/**
 * {@code hexforge bench-fleet}: the fleet's own figures in standalone mode — time to ready, orchestration overhead
 * (from a stage's completion to the next stage's start, both as the stage services report them), jobs/s, and 1 GB
 * through the gateway (upload) and its presigned URLs (download) against a plain MinIO-client put/get of the same bytes.
 */
final class FleetBench {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** The JIT's share of one core under which the fleet counts as warm, and how many rounds to wait for it at most. */
    private static final double SETTLED_JIT_CORES = 0.25;
    private static final int MAX_WARM_UP_ROUNDS = 8;

    static int run(String[] args) throws Exception {
        int jobs = Integer.parseInt(opt(args, "--jobs", "200"));
        int concurrency = Integer.parseInt(opt(args, "--concurrency", "8"));
        long mb = Long.parseLong(opt(args, "--transfer-mb", "1024"));
        Path home = Files.createTempDirectory("hexforge-bench");
        long t0 = System.nanoTime();
        try (Standalone fleet = Standalone.start(home, EmbeddedInfra.Ports.anyFree(), 0)) {
            System.out.printf("up       %.1f s to ready (fresh state: Kafka, PostgreSQL, S3, six services, the local runner)%n", (System.nanoTime() - t0) / 1e9);
            GatewayClient gw = new GatewayClient(fleet.gatewayUrl(), Files.readString(Standalone.tokenFile(home)).strip());
            String spec = "{\"model\": {\"path\": " + JSON.writeValueAsString(StandaloneMain.hexforgeHome().resolve("fixtures/qwen2-tiny")
                    .toAbsolutePath().normalize().toString()) + "}, \"stages\": [\"export\", \"sign\"], \"export\": {\"variant\": \"dynamic\"},"
                    + " \"sign\": {\"provenance\": false}}";
            if (jobs > 0) {
                orchestration(gw, spec, Math.max(10, jobs / 4), 1, "warm-up, one at a time");
                warmUntilCompiled(gw, spec, jobs, concurrency);
                long warmUp = fleet.submissionTimings().recorded();
                orchestration(gw, spec, jobs, concurrency, "measured");
                printChecks(fleet, warmUp);
                if (concurrency > 1) {
                    // the same checks with nothing else to wait for: under load their wall time is mostly the request
                    // thread waiting for one of the cores that the jobs in flight keep busy
                    System.out.println("quiet fleet    the same jobs one at a time after the run (a warm fleet, nothing else in flight):");
                    long quiet = fleet.submissionTimings().recorded();
                    orchestration(gw, spec, Math.max(10, jobs / 5), 1, "quiet");
                    printChecks(fleet, quiet);
                }
            }
            if (mb > 0) {
                transfer(fleet, gw, home, mb);
            }
        } finally {
            Folders.deleteQuietly(home);
        }
        return 0;
    }

    private static void printChecks(Standalone fleet, long since) {
        List<Double> checks = Arrays.stream(fleet.submissionTimings().sortedMillisSince(since)).boxed().toList();
        List<Double> cpu = Arrays.stream(fleet.submissionTimings().sortedCpuMillisSince(since)).boxed().toList();
        System.out.printf("               of which the gateway's checks (document, schema, ids, paths, limits, memory estimate; timed "
                + "around them) p50 %.2f ms, p99 %.2f ms, max %.2f ms over %d jobs%n", pct(checks, 0.50), pct(checks, 0.99),
                checks.get(checks.size() - 1), checks.size());
        System.out.printf("               the request thread's CPU time in those checks p50 %.2f ms, p99 %.2f ms, max %.2f ms "
                + "(the rest of the wall time is waiting: for a core, the database, a lock)%n", pct(cpu, 0.50), pct(cpu, 0.99),
                cpu.get(cpu.size() - 1));
    }

    /**
     * Loaded rounds like the measured one until the JIT has settled: the whole fleet in one JVM is some 30,000
     * classes, and on two cores the compiler threads take about one core for the first two minutes of load (1.0 of a
     * core through the first round of 500 jobs, 0.8 through the second, under a quarter after four to six), which the
     * first round's figures measure as much as the fleet. Each round's figures are printed, the first as what a cold
     * fleet gives. The share is the compilers' time over the wall time, so above 1 when both compiler threads run.
     */
    private static void warmUntilCompiled(GatewayClient gw, String spec, int jobs, int concurrency) throws Exception {
        for (int round = 1; ; round++) {
            if (orchestration(gw, spec, jobs, concurrency, "warm-up " + round + (round == 1 ? ", a cold fleet" : "")) <= SETTLED_JIT_CORES) {
                return;
            }
            if (round == MAX_WARM_UP_ROUNDS) {
                System.out.printf("               (still compiling after %d rounds: measuring anyway)%n", round);
                return;
            }
        }
    }

    /**
     * Jobs export → sign, {@code concurrency} in flight; the gap is sign's start minus export's completion. Prints and
     * returns the compilers' time over the round's wall time (the JIT's share of one core; this JVM is the fleet's).
     */
    private static double orchestration(GatewayClient gw, String spec, int n, int concurrency, String label) throws Exception {
        CompilationMXBean jit = ManagementFactory.getCompilationMXBean();
        long compiled0 = jit.getTotalCompilationTime();
        List<String> inFlight = new ArrayList<>();
        List<Double> gaps = new ArrayList<>();
        List<Double> toDispatch = new ArrayList<>();
        List<Double> toStart = new ArrayList<>();
        List<Double> submits = new ArrayList<>();
        int submitted = 0;
        long t0 = System.nanoTime();
        while (submitted < n || !inFlight.isEmpty()) {
            while (submitted < n && inFlight.size() < concurrency) {
                long s0 = System.nanoTime();
                inFlight.add(gw.ok(gw.send("POST", "/api/v1/jobs", spec, "application/json")).path("id").asText());
                submits.add((System.nanoTime() - s0) / 1e6);
                submitted++;
            }
            Thread.sleep(100); // the gaps come from the services' own timestamps; polling harder only loads the 2 cores
            // one list call a poll, and a job's details only once it has left "running": the bench's own requests
            // share the cores with what it measures (a GET per job in flight was 80 requests a second)
            Set<String> running = new HashSet<>();
            gw.ok(gw.send("GET", "/api/v1/jobs?state=running&size=200", null, null)).path("jobs")
                    .forEach(j -> running.add(j.path("id").asText()));
            for (var it = inFlight.iterator(); it.hasNext(); ) {
                String id = it.next();
                if (running.contains(id)) {
                    continue;
                }
                JsonNode job = gw.ok(gw.send("GET", "/api/v1/jobs/" + id, null, null));
                String state = job.path("state").asText();
                if (state.equals("running")) {
                    continue;
                }
                it.remove();
                if (!state.equals("completed")) {
                    throw new IllegalStateException("bench job " + job.path("id").asText() + " " + state + ": " + job.path("error"));
                }
                JsonNode s = job.path("stages");
                long finished = Instant.parse(s.get(0).path("workerFinishedAt").asText()).toEpochMilli();
                long dispatched = Instant.parse(s.get(1).path("startedAt").asText()).toEpochMilli();
                long started = Instant.parse(s.get(1).path("workerStartedAt").asText()).toEpochMilli();
                gaps.add((started - finished) * 1.0);
                toDispatch.add((dispatched - finished) * 1.0);
                toStart.add((started - dispatched) * 1.0);
            }
        }
        double secs = (System.nanoTime() - t0) / 1e9;
        Collections.sort(gaps);
        System.out.printf("orchestration  [%s] %d jobs (export -> sign), %d in flight: stage completed -> next stage started p50 %.0f ms, "
                + "p99 %.0f ms, max %.0f ms; %.2f jobs/s%n", label, n, concurrency, pct(gaps, 0.50), pct(gaps, 0.99),
                gaps.get(gaps.size() - 1), n / secs);
        Collections.sort(toDispatch);
        Collections.sort(toStart);
        System.out.printf("               of which completed -> gateway dispatched the next stage p50 %.0f ms, p99 %.0f ms; "
                + "dispatched -> started (commit, outbox, Kafka, the service's queue) p50 %.0f ms, p99 %.0f ms%n",
                pct(toDispatch, 0.50), pct(toDispatch, 0.99), pct(toStart, 0.50), pct(toStart, 0.99));
        Collections.sort(submits);
        System.out.printf("submission     POST /api/v1/jobs answered (checked, stored, first stage dispatched) p50 %.1f ms, p99 %.1f ms%n",
                pct(submits, 0.50), pct(submits, 0.99));
        double compiling = (jit.getTotalCompilationTime() - compiled0) / (secs * 1000);
        System.out.printf("               the JIT compiled for %.2f of a core's time during this round%n", compiling);
        return compiling;
    }

    private static void transfer(Standalone fleet, GatewayClient gw, Path home, long mb) throws Exception {
        long bytes = mb << 20;
        Path tar = home.resolve("big.tar");
        try (OutputStream out = Files.newOutputStream(tar); TarArchiveOutputStream t = new TarArchiveOutputStream(out)) {
            t.setBigNumberMode(TarArchiveOutputStream.BIGNUMBER_POSIX);
            byte[] config = Files.readAllBytes(StandaloneMain.hexforgeHome().resolve("fixtures/qwen2-tiny/config.json"));
            TarArchiveEntry c = new TarArchiveEntry("config.json");
            c.setSize(config.length);
            t.putArchiveEntry(c);
            t.write(config);
            t.closeArchiveEntry();
            TarArchiveEntry w = new TarArchiveEntry("weights.bin");
            w.setSize(bytes);
            t.putArchiveEntry(w);
            byte[] buf = new byte[1 << 20];
            SplittableRandom r = new SplittableRandom(1);
            for (long done = 0; done < bytes; done += buf.length) {
                for (int i = 0; i < buf.length; i += 8) {
                    long v = r.nextLong();
                    for (int k = 0; k < 8; k++) {
                        buf[i + k] = (byte) (v >>> (8 * k));
                    }
                }
                t.write(buf, 0, (int) Math.min(buf.length, bytes - done));
            }
            t.closeArchiveEntry();
        }
        long size = Files.size(tar);
        ArtifactStore s3 = new ArtifactStore(fleet.infra().s3().endpoint(), fleet.infra().s3().accessKey(), fleet.s3Secret());
        long a = System.nanoTime();
        try (InputStream in = Files.newInputStream(tar)) {
            s3.putStream("bench/direct", in, "application/octet-stream");
        }
        double direct = size / ((System.nanoTime() - a) / 1e9) / 1e6;
        a = System.nanoTime();
        JsonNode up = gw.ok(gw.upload("big.tar", () -> {
            try {
                return Files.newInputStream(tar);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }));
        double viaGateway = size / ((System.nanoTime() - a) / 1e9) / 1e6;
        System.out.printf("upload   %d MB: gateway %.0f MB/s (stored, hashed and every entry checked), plain MinIO-client put %.0f MB/s: %.0f%%%n",
                size >> 20, viaGateway, direct, 100 * viaGateway / direct);

        String spec = "{\"model\": {\"upload\": \"" + up.path("id").asText() + "\"}, \"stages\": [\"sign\"], \"sign\": {\"provenance\": false}}";
        String id = gw.ok(gw.send("POST", "/api/v1/jobs", spec, "application/json")).path("id").asText();
        JsonNode job;
        do {
            Thread.sleep(200);
            job = gw.ok(gw.send("GET", "/api/v1/jobs/" + id, null, null));
        } while (job.path("state").asText().equals("running"));
        String artifact = job.path("stages").get(0).path("outputs").get(0).path("id").asText();
        String weightsSha = job.path("stages").get(0).path("outputs").get(0).path("sha256").asText();
        String key = s3.manifest(weightsSha).stream().filter(e -> e.path().equals("weights.bin")).findFirst().orElseThrow().sha256();
        a = System.nanoTime();
        try (InputStream in = s3.getStream(ArtifactStore.key(key))) {
            Files.copy(in, home.resolve("plain-get.bin")); // to disk, as the download does
        }
        double get = bytes / ((System.nanoTime() - a) / 1e9) / 1e6;
        Files.delete(home.resolve("plain-get.bin"));
        Path out = home.resolve("downloaded");
        a = System.nanoTime();
        new ArtifactDownloader(gw).download(artifact, out, null, (p, d, n) -> { });
        double dl = bytes / ((System.nanoTime() - a) / 1e9) / 1e6;
        System.out.printf("download %d MB: gateway redirect + presigned GET %.0f MB/s (every file hashed, signature verified), "
                + "plain MinIO-client get to a file %.0f MB/s: %.0f%%%n", bytes >> 20, dl, get, 100 * dl / get);
    }

    private static double pct(List<Double> sorted, double p) {
        return sorted.get(Math.min(sorted.size() - 1, (int) Math.ceil(p * sorted.size()) - 1));
    }

    private static String opt(String[] args, String name, String def) {
        String v = StandaloneMain.option(args, name);
        return v == null ? def : v;
    }

}
