package dev.hexforge.devicerunner;

import dev.hexforge.generate.CausalLm;
import dev.hexforge.generate.DecodeSession;
import dev.hexforge.onnx.export.ExportInfo;
import dev.hexforge.onnx.runtime.OnnxLm;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * The {@code ort-cpu} backend: ONNX Runtime's CPU execution provider, available everywhere. Measures load time, time
 * to first token, prefill and decode tokens/s, peak resident memory, and greedy agreement with a reference
 * continuation when one is given.
 */
public final class OrtCpuBackend {
    public static final String NAME = "ort-cpu";
    private final int threads;

    public OrtCpuBackend(int threads) {
        this.threads = threads;
    }

    /**
     * @param reference prompt and expected greedy continuation (the host's reference forward), or null
     * @param bandwidth measured memory bandwidth in bytes/s, or null when not measured
     */
    public BenchmarkResult run(SignedBundle bundle, int promptLength, int newTokens, Reference reference, Double bandwidth) {
        if (!ExportInfo.isExport(bundle.dir())) {
            throw new IllegalArgumentException("bundle " + bundle.dir().getFileName() + " is not an ONNX export (no export.json); the "
                    + NAME + " backend runs exported models");
        }
        Map<String, String> notAvailable = new LinkedHashMap<>();
        long t0 = System.nanoTime();
        try (CausalLm lm = OnnxLm.open(bundle.dir(), threads)) {
            double load = (System.nanoTime() - t0) / 1e9;
            int len = Math.min(promptLength, lm.maxContext() - newTokens);
            int[] prompt = new SplittableRandom(1).ints(len, 10, Math.min(1000, lm.vocabSize())).toArray();
            try (DecodeSession warm = lm.start(len + newTokens)) {
                warm.append(prompt);
                warm.append(new int[]{5});
            }
            double ttft;
            double decode;
            try (DecodeSession s = lm.start(len + newTokens)) {
                long a = System.nanoTime();
                float[] logits = s.append(prompt);
                argmax(logits, lm.vocabSize());
                ttft = (System.nanoTime() - a) / 1e9;
                long b = System.nanoTime();
                for (int i = 0; i < newTokens; i++) {
                    s.append(new int[]{7 + i});
                }
                decode = (System.nanoTime() - b) / 1e9;
            }
            Double agreement = null;
            if (reference != null) {
                agreement = agreement(lm, reference);
            } else {
                notAvailable.put("tokenAgreement", "no reference continuation was given");
            }
            Long rss = peakRss();
            if (rss == null) {
                notAvailable.put("peakRssBytes", "this OS does not report peak resident memory (/proc/self/status)");
            }
            long weights = weightBytes(bundle.dir());
            Double efficiency = null;
            if (bandwidth == null) {
                notAvailable.put("efficiency", "memory bandwidth was not measured");
            } else {
                efficiency = (newTokens / decode) * weights / bandwidth;
            }
            notAvailable.put("energyPerToken", "the host exposes no power sensor to " + NAME);
            notAvailable.put("thermalState", "the host exposes no thermal status to " + NAME);
            notAvailable.put("offloadedOps", NAME + " runs every op on the CPU; there is no NPU to fall back from");
            return new BenchmarkResult(NAME, bundle.rootDigest(), len, newTokens, load, ttft * 1e3, len / ttft, newTokens / decode,
                    rss, weights, bandwidth, efficiency, agreement, notAvailable);
        }
    }

    /** A prompt and the continuation the host's reference forward produced for it (greedy). */
    public record Reference(int[] prompt, int[] continuation) {
    }

    private static double agreement(CausalLm lm, Reference ref) {
        int n = ref.continuation().length;
        int same = 0;
        try (DecodeSession s = lm.start(ref.prompt().length + n)) {
            float[] logits = s.append(ref.prompt());
            for (int i = 0; i < n; i++) {
                int next = argmax(logits, lm.vocabSize());
                if (next == ref.continuation()[i]) {
                    same++;
                }
                logits = s.append(new int[]{ref.continuation()[i]}); // teacher-forced: one miss does not cascade
            }
        }
        return n == 0 ? 1.0 : (double) same / n;
    }

    private static int argmax(float[] logits, int vocab) {
        int off = logits.length - vocab;
        int best = 0;
        for (int i = 1; i < vocab; i++) {
            if (logits[off + i] > logits[off + best]) {
                best = i;
            }
        }
        return best;
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

    /** Bytes of weights one decode step reads: the export's weight file. */
    static long weightBytes(Path dir) {
        try (var files = Files.list(dir.resolve("onnx"))) {
            return files.filter(p -> p.getFileName().toString().endsWith(".onnx_data")).mapToLong(p -> {
                try {
                    return Files.size(p);
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            }).max().orElse(0);
        } catch (IOException e) {
            throw new UncheckedIOException("reading " + dir.resolve("onnx") + ": " + e.getMessage(), e);
        }
    }
}
