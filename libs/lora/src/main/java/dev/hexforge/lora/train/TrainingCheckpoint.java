package dev.hexforge.lora.train;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.hexforge.checkpoint.ModelConfig;
import dev.hexforge.io.Folders;
import dev.hexforge.lora.LoraAdapter;
import dev.hexforge.safetensors.DType;
import dev.hexforge.safetensors.SafetensorsFile;
import dev.hexforge.safetensors.SafetensorsWriter;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * A resumable point of a run in {@code OUT/checkpoints/step-NNNNNN/}: the adapter (PEFT files), the AdamW moments
 * ({@code optimizer.safetensors}) and {@code trainer_state.json} (steps done, loss curve, epoch metrics, and the
 * fingerprints of the settings and data it belongs to). The data position and every random stream (shuffle,
 * dropout) are functions of the seed and the step, so nothing else is needed to continue bit-for-bit. A
 * checkpoint folder appears only when complete; the two newest are kept.
 */
public final class TrainingCheckpoint {
    static final String DIR = "checkpoints";
    static final String STATE = "trainer_state.json";
    static final String OPTIMIZER = "optimizer.safetensors";
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final int KEEP = 2;

    /** What a run has done so far. */
    public record State(int step, String options, String data, List<double[]> lossCurve,
                        List<TrainingListener.EpochMetrics> epochs) {
    }

    public record Loaded(Path dir, State state, LoraAdapter adapter, float[][] firstMoments, float[][] secondMoments) {
    }

    private TrainingCheckpoint() {
    }

    /** Where the checkpoint of {@code step} lives under a run's output folder. */
    public static Path folder(Path out, int step) {
        return out.resolve(DIR).resolve(String.format("step-%06d", step));
    }

    public static Path save(Path out, State state, LoraAdapter adapter, AdamW<?> adam) {
        Path root = out.resolve(DIR);
        Path dir = folder(out, state.step());
        Path tmp = root.resolve(dir.getFileName() + ".partial");
        try {
            Folders.deleteQuietly(tmp);
            Files.createDirectories(tmp);
            adapter.write(tmp);
            List<SafetensorsWriter.Entry> entries = new ArrayList<>();
            float[][] m = adam.firstMoments();
            float[][] v = adam.secondMoments();
            for (int i = 0; i < m.length; i++) {
                entries.add(SafetensorsWriter.Entry.ofFloats("exp_avg." + i, new long[]{m[i].length}, m[i], DType.F32));
                entries.add(SafetensorsWriter.Entry.ofFloats("exp_avg_sq." + i, new long[]{v[i].length}, v[i], DType.F32));
            }
            SafetensorsWriter.write(tmp.resolve(OPTIMIZER), Map.of("format", "pt"), entries);
            Files.writeString(tmp.resolve(STATE), JSON.writerWithDefaultPrettyPrinter().writeValueAsString(toJson(state)));
            Folders.deleteQuietly(dir);
            Files.move(tmp, dir, StandardCopyOption.ATOMIC_MOVE);
            List<Path> all = list(root);
            for (int i = 0; i < all.size() - KEEP; i++) {
                Folders.deleteQuietly(all.get(i));
            }
            return dir;
        } catch (IOException e) {
            Folders.deleteQuietly(tmp);
            throw new UncheckedIOException("writing checkpoint " + dir + ": " + e.getMessage(), e);
        }
    }

    /** Whether {@code out} holds any complete checkpoint. */
    public static boolean hasAny(Path out) {
        return !list(out.resolve(DIR)).isEmpty();
    }

    /** The newest complete checkpoint under {@code out}, if any. */
    public static Optional<Loaded> latest(Path out, ModelConfig base) {
        List<Path> all = list(out.resolve(DIR));
        if (all.isEmpty()) {
            return Optional.empty();
        }
        Path dir = all.get(all.size() - 1);
        try {
            State state = fromJson(JSON.readTree(dir.resolve(STATE).toFile()));
            LoraAdapter adapter = LoraAdapter.read(dir, base);
            int modules = adapter.deltas().size() * 2;
            float[][] m = new float[modules][];
            float[][] v = new float[modules][];
            try (SafetensorsFile f = SafetensorsFile.open(dir.resolve(OPTIMIZER))) {
                for (int i = 0; i < modules; i++) {
                    m[i] = f.floats("exp_avg." + i);
                    v[i] = f.floats("exp_avg_sq." + i);
                }
            }
            return Optional.of(new Loaded(dir, state, adapter, m, v));
        } catch (IOException | RuntimeException e) {
            throw new TrainingException("checkpoint " + dir + " is unreadable (" + e.getMessage()
                    + "); delete it to resume from the one before", e);
        }
    }

    private static List<Path> list(Path root) {
        if (!Files.isDirectory(root)) {
            return List.of();
        }
        try (Stream<Path> s = Files.list(root)) {
            return s.filter(p -> p.getFileName().toString().matches("step-\\d{6}") && Files.isDirectory(p)).sorted().toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static ObjectNode toJson(State s) {
        ObjectNode n = JSON.createObjectNode();
        n.put("step", s.step());
        n.put("options", s.options());
        n.put("data", s.data());
        ArrayNode curve = n.putArray("loss_curve");
        for (double[] p : s.lossCurve()) {
            curve.addArray().add((int) p[0]).add(p[1]);
        }
        ArrayNode epochs = n.putArray("epochs");
        for (TrainingListener.EpochMetrics e : s.epochs()) {
            ObjectNode o = epochs.addObject();
            o.put("epoch", e.epoch());
            o.put("train_loss", e.trainLoss());
            o.put("eval_loss", e.evalLoss());
            o.put("exact_match", e.exactMatch());
        }
        return n;
    }

    private static State fromJson(JsonNode n) {
        List<double[]> curve = new ArrayList<>();
        n.path("loss_curve").forEach(p -> curve.add(new double[]{p.get(0).asDouble(), p.get(1).asDouble()}));
        List<TrainingListener.EpochMetrics> epochs = new ArrayList<>();
        n.path("epochs").forEach(e -> epochs.add(new TrainingListener.EpochMetrics(e.path("epoch").asInt(),
                e.path("train_loss").asDouble(), number(e.path("eval_loss")), number(e.path("exact_match")))));
        if (!n.has("step") || !n.has("options") || !n.has("data")) {
            throw new TrainingException(STATE + " lacks step, options or data");
        }
        return new State(n.path("step").asInt(), n.path("options").asText(), n.path("data").asText(), curve, epochs);
    }

    private static double number(JsonNode n) {
        return n.isNumber() ? n.asDouble() : Double.NaN;
    }
}
