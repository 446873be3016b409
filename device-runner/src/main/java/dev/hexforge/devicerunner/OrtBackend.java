package dev.hexforge.devicerunner;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.hexforge.compile.Soc;
import dev.hexforge.contracts.BenchmarkResult;
import dev.hexforge.eval.DeviceReference;
import dev.hexforge.eval.Perplexity;
import dev.hexforge.generate.CausalLm;
import dev.hexforge.generate.DecodeSession;
import dev.hexforge.generate.LogitRows;
import dev.hexforge.kernels.MemoryBandwidth;
import dev.hexforge.onnx.export.ExportInfo;
import dev.hexforge.onnx.runtime.OnnxLm;
import dev.hexforge.onnx.runtime.OpProfile;
import dev.hexforge.onnx.runtime.OrtSessions;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * The ONNX Runtime backends: {@code ort-cpu} (the CPU execution provider, everywhere) and {@code ort-qnn} (the QNN
 * execution provider with the bundle's provider options and CPU fallback disabled, only where this ONNX Runtime build
 * has it — {@link #qnnAvailable()}). Measures load time, time to first token, prefill and decode tokens/s, peak
 * resident memory, efficiency against the memory bandwidth, and accuracy against the host's reference.
 */
public final class OrtBackend implements Backend {
    public static final String CPU = "ort-cpu";
    public static final String QNN = "ort-qnn";
    /** Timed prefill + decode runs after one warm-up; the median of each is reported (single runs vary by ±25% here). */
    static final int TIMED_RUNS = 3;
    static final int PROFILED_STEPS = 8;
    private final String name;
    private final int threads;
    private final Soc soc;

    private OrtBackend(String name, int threads, Soc soc) {
        this.name = name;
        this.threads = threads;
        this.soc = soc;
    }

    public static OrtBackend cpu(int threads) {
        return new OrtBackend(CPU, threads, null);
    }

    /**
     * The QNN EP backend; refuses to exist where the native ONNX Runtime has no QNN EP.
     *
     * @param soc the host's chipset, whose spec-sheet bandwidth is the roofline; null: measured on the CPU
     */
    public static OrtBackend qnn(int threads, String soc) {
        if (!qnnAvailable()) {
            throw new IllegalStateException("this ONNX Runtime build (" + OrtSessions.runtimeVersion() + ") has no QNN execution provider");
        }
        return new OrtBackend(QNN, threads, soc == null ? null : Soc.find(soc).orElse(null));
    }

    /** Share of the reference continuation predicted greedily, teacher-forced (one miss does not cascade). */
    private static double agreement(CausalLm lm, DeviceReference ref) {
        int[] seq = ref.teacherForcedSequence();
        try (DecodeSession s = lm.start(seq.length)) {
            return ref.agreement(s.appendAll(seq), lm.vocabSize());
        }
    }

    private static double median(double[] v) {
        double[] c = v.clone();
        Arrays.sort(c);
        return c[c.length / 2];
    }

    public static boolean qnnAvailable() {
        return OrtSessions.qnnAvailable();
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public BenchmarkResult run(SignedBundle bundle, int promptLength, int newTokens, DeviceReference reference) {
        if (!ExportInfo.isExport(bundle.dir())) {
            throw new IllegalArgumentException("bundle " + bundle.dir().getFileName() + " is not an ONNX export (no export.json); the "
                    + name + " backend runs exported models");
        }
        BenchmarkResult timed = timed(bundle, promptLength, newTokens, reference);
        // profiled once the timed model is closed, so the two never hold the weights at the same time
        return timed.withOpTimings(opTimings(bundle.dir(), Math.min(8, timed.promptLength())));
    }

    private BenchmarkResult timed(SignedBundle bundle, int promptLength, int newTokens, DeviceReference reference) {
        Map<String, String> notAvailable = new LinkedHashMap<>();
        long t0 = System.nanoTime();
        Map<String, String> qnn = name.equals(QNN) ? providerOptions(bundle.dir()) : null;
        double load;
        double ttft;
        double decode;
        int len;
        Double agreement = null;
        Double ppl = null;
        Double refPpl = null;
        // timed as a generating runtime runs it (a dynamic export's head for the last prompt position only)
        CausalLm lm = OnnxLm.open(bundle.dir(), threads, qnn, null, LogitRows.LAST);
        try {
            load = (System.nanoTime() - t0) / 1e9;
            len = Math.min(promptLength, lm.maxContext() - newTokens);
            int[] prompt = new SplittableRandom(1).ints(len, 10, Math.min(1000, lm.vocabSize())).toArray();
            double[] ttfts = new double[TIMED_RUNS];
            double[] decodes = new double[TIMED_RUNS];
            for (int run = -1; run < TIMED_RUNS; run++) { // run -1: the warm-up, the timed workload itself (see BenchCommand.Generate)
                try (DecodeSession s = lm.start(len + newTokens)) {
                    long a = System.nanoTime();
                    DeviceReference.argmax(s.append(prompt), lm.vocabSize());
                    long b = System.nanoTime();
                    for (int i = 0; i < newTokens; i++) {
                        s.append(new int[]{7 + i});
                    }
                    if (run >= 0) {
                        ttfts[run] = (b - a) / 1e9;
                        decodes[run] = (System.nanoTime() - b) / 1e9;
                    }
                }
            }
            ttft = median(ttfts);
            decode = median(decodes);
            if (reference == null) {
                notAvailable.put("tokenAgreement", "the bundle has no " + DeviceReference.FILE);
                notAvailable.put("perplexity", "the bundle has no " + DeviceReference.FILE);
            } else {
                if (lm.logitRows() == LogitRows.LAST) { // the reference checks score every position: open it again for them
                    lm.close();
                    lm = null; // the finally must not close it twice if the reopen fails
                    lm = OnnxLm.open(bundle.dir(), threads, qnn, null, LogitRows.ALL);
                }
                agreement = agreement(lm, reference);
                if (reference.hasPerplexity()) {
                    ppl = Perplexity.evaluate(lm, reference.perplexityIds(), reference.perplexityWindow(), null).perplexity();
                    refPpl = reference.perplexity();
                } else {
                    notAvailable.put("perplexity", "the bundle's reference has no text to score (exported before references carried one)");
                }
            }
        } finally {
            if (lm != null) {
                lm.close();
            }
        }
        Long rss = peakRss();
        if (rss == null) {
            notAvailable.put("peakRssBytes", "this OS does not report peak resident memory (/proc/self/status)");
        }
        long weights = ExportInfo.read(bundle.dir()).weightBytes(bundle.dir());
        double decodeTps = newTokens / decode;
        MemoryBandwidth.Measured host = soc != null ? null : HostBandwidth.measured(threads);
        double bandwidth = soc != null ? soc.memoryBandwidth() : host.bytesPerSecond();
        String bandwidthSource = soc != null ? soc.marketing() + " spec-sheet peak (SoC table)"
                : "measured (" + host.describe(threads) + ")";
        notAvailable.put("energyPerToken", "the host exposes no power sensor to " + name);
        notAvailable.put("thermalState", "the host exposes no thermal status to " + name);
        Integer offNpu = null;
        if (name.equals(CPU)) {
            notAvailable.put("opsOffNpu", CPU + " runs every op on the CPU; there is no NPU to fall back from");
        } else {
            offNpu = 0; // the session loaded with session.disable_cpu_ep_fallback=1: every node is on the QNN EP
        }
        return new BenchmarkResult(name, "host", bundle.rootDigest(), len, newTokens, load, ttft * 1e3, len / ttft, decodeTps, rss,
                weights, bandwidth, bandwidthSource, BenchmarkResult.efficiency(decodeTps, weights, bandwidth), agreement, ppl, refPpl,
                offNpu, null, null, null, notAvailable);
    }

    /** Time per op type of one decode step, from a separate profiled run ({@link OpProfile#profileDecode}). */
    private Map<String, Double> opTimings(Path bundle, int promptTokens) {
        return OpProfile.profileDecode(bundle, threads, name.equals(QNN) ? providerOptions(bundle) : null, promptTokens, PROFILED_STEPS);
    }

    /** The QNN provider options the compile stage wrote into the bundle's manifest. */
    static Map<String, String> providerOptions(Path dir) {
        Path manifest = dir.resolve("manifest.json");
        if (!Files.isRegularFile(manifest)) {
            throw new IllegalArgumentException("bundle " + dir.getFileName() + " has no manifest.json: compile it for the ort-qnn target");
        }
        try {
            JsonNode po = new ObjectMapper().readTree(manifest.toFile()).path("providerOptions");
            Map<String, String> out = new LinkedHashMap<>();
            po.properties().forEach(e -> out.put(e.getKey(), e.getValue().asText()));
            if (out.isEmpty()) {
                throw new IllegalArgumentException("bundle " + dir.getFileName() + " was not compiled for ort-qnn (no providerOptions)");
            }
            return out;
        } catch (IOException e) {
            throw new UncheckedIOException("reading " + manifest + ": " + e.getMessage(), e);
        }
    }

    static Long peakRss() {
        Path status = Path.of("/proc/self/status");
        if (!Files.isReadable(status)) {
            return null;
        }
        try {
            List<String> lines = Files.readAllLines(status);
            for (String l : lines) {
                if (l.startsWith("VmHWM:")) {
                    return Long.parseLong(l.replaceAll("[^0-9]", "")) * 1024;
                }
            }
            return null;
        } catch (IOException e) {
            return null;
        }
    }
}
