package dev.hexforge.onnx.runtime;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.hexforge.generate.CausalLm;
import dev.hexforge.generate.DecodeSession;
import dev.hexforge.generate.LogitRows;
import dev.hexforge.io.Folders;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;

/**
 * Time per operator type of one decode step, read from the profiles ONNX Runtime writes for a model opened with a
 * profile folder ({@link OnnxLm#open(Path, int, Map, Path)}): the node events of the decode runs — the token graphs'
 * runs of a static export, every run after the first (the prompt) of a dynamic one — summed by op type and divided by
 * the number of runs.
 */
public final class OpProfile {
    private static final ObjectMapper JSON = new ObjectMapper();

    private OpProfile() {
    }

    /**
     * Profiles a separate short run of the export in {@code bundle} — a prompt of {@code promptTokens} tokens, then
     * {@code steps} one-token steps — so the profiler's overhead stays out of timed figures; returns
     * {@link #decodeStep(Path)} of it.
     *
     * @param qnn the QNN provider options, or null for the CPU
     */
    public static Map<String, Double> profileDecode(Path bundle, int threads, Map<String, String> qnn, int promptTokens, int steps) {
        Path profiles = null;
        try {
            profiles = Files.createTempDirectory("hexforge-ort-profile");
            try (CausalLm lm = OnnxLm.open(bundle, threads, qnn, profiles, LogitRows.LAST);
                 DecodeSession s = lm.start(promptTokens + steps)) {
                s.append(new SplittableRandom(2).ints(promptTokens, 10, Math.min(1000, lm.vocabSize())).toArray());
                for (int i = 0; i < steps; i++) {
                    s.append(new int[]{11 + i});
                }
            }
            return decodeStep(profiles);
        } catch (IOException e) {
            throw new UncheckedIOException("profiling " + bundle + ": " + e.getMessage(), e);
        } finally {
            if (profiles != null) {
                Folders.deleteQuietly(profiles);
            }
        }
    }

    /** Milliseconds per decode step by op type, largest first. */
    public static Map<String, Double> decodeStep(Path profileDir) {
        Map<String, Double> micros = new TreeMap<>();
        int steps = 0;
        try (var files = Files.list(profileDir)) {
            for (Path f : files.filter(p -> p.getFileName().toString().endsWith(".json")).sorted().toList()) {
                String name = f.getFileName().toString();
                boolean dynamic = name.startsWith("model_");
                if (!dynamic && !name.startsWith("token")) {
                    continue;
                }
                JsonNode events = JSON.readTree(f.toFile());
                List<JsonNode> runs = new ArrayList<>();
                events.forEach(e -> {
                    if (e.path("cat").asText().equals("Session") && e.path("name").asText().equals("model_run")) {
                        runs.add(e);
                    }
                });
                runs.sort(Comparator.comparingLong(e -> e.path("ts").asLong()));
                long after = dynamic && !runs.isEmpty() ? runs.get(0).path("ts").asLong() + runs.get(0).path("dur").asLong() : Long.MIN_VALUE;
                if (name.startsWith("token_") || name.startsWith("token.0_")) { // every part of a split graph runs once a step
                    steps += runs.size();
                } else if (dynamic) {
                    steps += Math.max(0, runs.size() - 1);
                }
                for (JsonNode e : events) {
                    if (e.path("cat").asText().equals("Node") && e.path("name").asText().endsWith("_kernel_time")
                            && e.path("ts").asLong() >= after) {
                        micros.merge(e.path("args").path("op_name").asText("?"), e.path("dur").asDouble(), Double::sum);
                    }
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException("reading ONNX Runtime profiles in " + profileDir + ": " + e.getMessage(), e);
        }
        if (steps == 0) {
            return Map.of();
        }
        int n = steps;
        Map<String, Double> out = new LinkedHashMap<>();
        micros.entrySet().stream().sorted(Map.Entry.<String, Double>comparingByValue().reversed())
                .forEach(e -> out.put(e.getKey(), e.getValue() / n / 1e3));
        return out;
    }
}
