package dev.hexforge.onnx.lora;

import dev.hexforge.checkpoint.ModelConfig;
import dev.hexforge.checkpoint.TensorNames;
import dev.hexforge.checkpoint.TensorNames.Linear;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

/**
 * The LoRA inputs of an export's graphs (its {@code export.json}'s {@code lora}): every layer's linear of each module
 * listed takes {@code <weight's module>.lora_A.weight} [rank, in] and {@code .lora_B.weight} [out, rank] as graph
 * inputs and adds {@code x · Aᵀ · Bᵀ} to its output. An adapter's scale is in its B; a lower rank is padded with zeros,
 * which add nothing; all zeros is the base model. Each adapter of the export is an ONNX Runtime adapter file under
 * {@code adapters/} holding every one of these inputs.
 *
 * @param rank     the inputs' rank: the largest of the export's adapters
 * @param modules  the linears that take inputs, by short name ({@code q_proj}...), in the decoder's order
 * @param adapters each adapter's name and its file, relative to the export folder
 */
public record LoraInputs(int rank, List<String> modules, Map<String, String> adapters) {
    public static final int MAX_RANK = 512;
    public static final String FOLDER = "adapters";
    /** An adapter's name: a file name on every system, and a flag value without quoting. */
    public static final Pattern NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9_-]{0,63}");

    public LoraInputs {
        if (rank < 1 || rank > MAX_RANK) {
            throw new IllegalArgumentException("LoRA rank must be between 1 and " + MAX_RANK + ", got " + rank);
        }
        modules = List.copyOf(modules);
        adapters = adapters == null ? Map.of() : new LinkedHashMap<>(adapters);
    }

    /** The inputs of rank {@code rank} on {@code linears}, with the adapters named. */
    public static LoraInputs of(int rank, List<Linear> linears, List<String> adapterNames) {
        List<String> modules = new ArrayList<>();
        for (Linear l : Linear.values()) {
            if (linears.contains(l)) {
                modules.add(l.shortName());
            }
        }
        Map<String, String> files = new LinkedHashMap<>();
        adapterNames.forEach(n -> files.put(n, FOLDER + "/" + n + OnnxAdapterFile.EXTENSION));
        return new LoraInputs(rank, modules, files);
    }

    public boolean covers(Linear l) {
        return modules.contains(l.shortName());
    }

    /** The linears that take inputs, in the decoder's order. */
    public List<Linear> linears() {
        return java.util.Arrays.stream(Linear.values()).filter(this::covers).toList();
    }

    public static String nameA(int layer, Linear l) {
        return TensorNames.layer(layer) + l.module() + ".lora_A.weight";
    }

    public static String nameB(int layer, Linear l) {
        return TensorNames.layer(layer) + l.module() + ".lora_B.weight";
    }

    /** Whether a graph input is one of LoRA's (an adapter's to feed). */
    public static boolean isInput(String name) {
        return name.endsWith(".lora_A.weight") || name.endsWith(".lora_B.weight");
    }

    public long[] shapeA(ModelConfig c, Linear l) {
        return new long[]{rank, c.linearShape(l)[1]};
    }

    public long[] shapeB(ModelConfig c, Linear l) {
        return new long[]{c.linearShape(l)[0], rank};
    }

    /** The file of the adapter {@code name} in the export folder {@code dir}, or null when the export has none of that name. */
    public Path adapterFile(Path dir, String name) {
        String rel = adapters.get(name);
        return rel == null ? null : dir.resolve(rel);
    }
}
