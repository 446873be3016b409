package dev.hexforge.onnx.qdq;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.hexforge.onnx.export.ExportException;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The calibrated encoding of every activation of a model's static graphs, by tensor name (names are the graph's own,
 * the same in the prompt and the token graph and in every part), with the settings they were chosen for, how ranges
 * were chosen and the activations whose quantization is noisiest (lowest signal-to-quantization-noise ratio on the
 * calibration chunks). Stored as {@code activations.json} beside a quantized checkpoint.
 */
public record ActivationEncodings(Activations settings, String rangeMethod, int calibrationSequences,
                                  List<String> noisiest, Map<String, Encoding> tensors) {
    public static final String FILE = "activations.json";
    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

    public ActivationEncodings {
        if (!settings.quantized()) {
            throw new IllegalArgumentException("float activations have no encodings");
        }
        tensors = Map.copyOf(tensors);
        noisiest = List.copyOf(noisiest);
    }

    public void write(Path file) {
        ObjectNode root = JSON.createObjectNode();
        root.put("activations", settings.bits());
        root.put("kvBits", settings.kvBits());
        root.put("quantizedIo", settings.quantizedIo());
        root.put("rangeMethod", rangeMethod);
        root.put("calibrationSequences", calibrationSequences);
        noisiest.forEach(root.putArray("noisiest")::add);
        ObjectNode t = root.putObject("tensors");
        new TreeMap<>(tensors).forEach((name, e) -> t.putObject(name).put("bits", e.bits()).put("scale", e.scale())
                .put("zeroPoint", e.zeroPoint()));
        try {
            JSON.writeValue(file.toFile(), root);
        } catch (IOException e) {
            throw new UncheckedIOException("writing " + file + ": " + e.getMessage(), e);
        }
    }

    /** The encodings stored in {@code file}, or null when there is none (a weight-only checkpoint). */
    public static ActivationEncodings read(Path file) {
        if (!Files.isRegularFile(file)) {
            return null;
        }
        try {
            JsonNode root = JSON.readTree(file.toFile());
            Map<String, Encoding> tensors = new TreeMap<>();
            root.path("tensors").fields().forEachRemaining(e -> {
                JsonNode v = e.getValue();
                try {
                    tensors.put(e.getKey(), new Encoding(v.path("bits").asInt(), (float) v.path("scale").asDouble(),
                            v.path("zeroPoint").asInt()));
                } catch (IllegalArgumentException bad) {
                    throw new IllegalArgumentException("tensor '" + (e.getKey().length() > 80 ? e.getKey().substring(0, 80) + "..." : e.getKey()) + "': " + bad.getMessage(), bad);
                }
            });
            List<String> noisiest = new ArrayList<>();
            root.path("noisiest").forEach(n -> noisiest.add(n.asText()));
            return new ActivationEncodings(new Activations(root.path("activations").asInt(), root.path("kvBits").asInt(),
                    root.path("quantizedIo").asBoolean()),
                    root.path("rangeMethod").asText(), root.path("calibrationSequences").asInt(), noisiest, tensors);
        } catch (IOException | IllegalArgumentException e) {
            throw new ExportException(file + ": not readable activation encodings: " + e.getMessage(), e);
        }
    }
}
