package dev.hexforge.pass;

import dev.hexforge.checkpoint.ModelConfig;
import dev.hexforge.checkpoint.ModelDigest;
import dev.hexforge.checkpoint.TensorNames.Linear;
import dev.hexforge.forward.DecoderWeights.LowRankDelta;
import dev.hexforge.lora.LoraAdapter;
import dev.hexforge.lora.LoraConfig;
import dev.hexforge.lora.LoraException;
import dev.hexforge.onnx.export.ExportException;
import dev.hexforge.onnx.lora.LoraCalibration;
import dev.hexforge.onnx.lora.LoraInputs;
import dev.hexforge.onnx.lora.OnnxAdapterFile;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * PEFT LoRA adapters exported beside their base model instead of merged into it: the graphs take LoRA inputs
 * ({@link LoraInputs}: the modules of any adapter, at the largest rank) and each adapter becomes an ONNX Runtime
 * adapter file holding every one of those inputs, its A padded with zero rows to the rank, its B scaled by the
 * adapter's {@code lora_alpha / r} (or rsLoRA's) and padded with zero columns, and zeros for a module it does not
 * adapt. Zero rows and columns add nothing, so each adapter computes exactly its PEFT model.
 */
final class AdapterExport {
    /** Adapters one export takes at most. */
    static final int MAX_ADAPTERS = 32;

    private final LoraInputs inputs;
    private final Map<String, LoraAdapter> adapters;

    private AdapterExport(LoraInputs inputs, Map<String, LoraAdapter> adapters) {
        this.inputs = inputs;
        this.adapters = adapters;
    }

    /** Checks the names and reads every adapter against the base model's config; null when there are none. */
    static AdapterExport read(Map<String, Path> named, ModelConfig base) {
        if (named.isEmpty()) {
            return null;
        }
        checkNames(named);
        Map<String, LoraAdapter> adapters = new LinkedHashMap<>();
        int rank = 0;
        Set<Linear> modules = new LinkedHashSet<>();
        for (Map.Entry<String, Path> e : named.entrySet()) {
            LoraAdapter a;
            try {
                a = LoraAdapter.read(e.getValue(), base);
            } catch (LoraException ex) {
                throw new LoraException("adapter '" + e.getKey() + "' (" + e.getValue() + "): " + ex.getMessage(), ex);
            }
            if (a.config().r() > LoraInputs.MAX_RANK) {
                throw new LoraException("adapter '" + e.getKey() + "' has rank " + a.config().r() + ", over the "
                        + LoraInputs.MAX_RANK + " an export takes");
            }
            adapters.put(e.getKey(), a);
            rank = Math.max(rank, a.config().r());
            for (Linear l : Linear.values()) {
                if (a.config().targetModules().contains(l.shortName())) {
                    modules.add(l);
                }
            }
        }
        return new AdapterExport(LoraInputs.of(rank, List.copyOf(modules), List.copyOf(adapters.keySet())), adapters);
    }

    /** Adapter names are file names in the export: held to {@link LoraInputs#NAME}, distinct, and few. */
    static void checkNames(Map<String, Path> named) {
        if (named.size() > MAX_ADAPTERS) {
            throw new LoraException(named.size() + " adapters; an export takes at most " + MAX_ADAPTERS);
        }
        for (String name : named.keySet()) {
            if (!LoraInputs.NAME.matcher(name).matches()) {
                throw new LoraException("adapter name '" + name + "' must be 1 to 64 letters, digits, '_' or '-', starting "
                        + "with a letter or digit (it names OUT/" + LoraInputs.FOLDER + "/NAME" + OnnxAdapterFile.EXTENSION + ")");
            }
        }
    }

    LoraInputs inputs() {
        return inputs;
    }

    /** The resume key's fields: each adapter by name and the digest of its files. */
    static Map<String, String> settings(Map<String, Path> named) {
        Map<String, String> f = new LinkedHashMap<>();
        named.forEach((name, dir) -> f.put("adapter " + name,
                ModelDigest.ofFiles(dir, List.of(LoraConfig.FILE, LoraAdapter.WEIGHTS))));
        return f;
    }

    /** What activation calibration runs besides the base: every adapter's values of every LoRA input, by name. */
    LoraCalibration calibration(ModelConfig c) {
        List<Map<String, float[]>> values = new ArrayList<>();
        for (LoraAdapter a : adapters.values()) {
            Map<String, float[]> byName = new LinkedHashMap<>();
            graphInputs(a, c).forEach(in -> byName.put(in.name(), in.values()));
            values.add(byName);
        }
        return new LoraCalibration(inputs, values);
    }

    /** Writes {@code dir/adapters/NAME.onnx_adapter} for every adapter. */
    void writeInto(Path dir, ModelConfig c) {
        try {
            Files.createDirectories(dir.resolve(LoraInputs.FOLDER));
            for (Map.Entry<String, LoraAdapter> e : adapters.entrySet()) {
                OnnxAdapterFile.write(new OnnxAdapterFile.Adapter(1, 1, parameters(e.getValue(), c)),
                        inputs.adapterFile(dir, e.getKey()));
            }
        } catch (IOException e) {
            throw new ExportException("writing the adapters into " + dir + ": " + e.getMessage(), e);
        }
    }

    /** Every LoRA input of the graphs, in layer and module order, from {@code a}, as adapter file parameters. */
    List<OnnxAdapterFile.Parameter> parameters(LoraAdapter a, ModelConfig c) {
        return graphInputs(a, c).stream().map(in -> OnnxAdapterFile.Parameter.ofFloats(in.name(), in.shape(), in.values())).toList();
    }

    /** One LoRA input of the graphs with an adapter's values for it. */
    private record GraphInput(String name, long[] shape, float[] values) {
    }

    /**
     * Every LoRA input of the graphs, in layer and module order, from {@code a}: A padded with zero rows to the rank,
     * B scaled and padded with zero columns, zeros for a module {@code a} does not adapt.
     */
    private List<GraphInput> graphInputs(LoraAdapter a, ModelConfig c) {
        int rank = inputs.rank();
        List<GraphInput> out = new ArrayList<>();
        for (int layer = 0; layer < c.numLayers(); layer++) {
            for (Linear l : inputs.linears()) {
                long[] w = c.linearShape(l);
                int rows = (int) w[0];
                int in = (int) w[1];
                float[] pa = new float[rank * in];
                float[] pb = new float[rows * rank];
                LowRankDelta d = a.delta(layer, l);
                if (d != null) {
                    int r = d.rank();
                    System.arraycopy(d.a(), 0, pa, 0, r * in);
                    for (int o = 0; o < rows; o++) {
                        for (int k = 0; k < r; k++) {
                            pb[o * rank + k] = d.b()[o * r + k] * d.scale();
                        }
                    }
                }
                out.add(new GraphInput(LoraInputs.nameA(layer, l), inputs.shapeA(c, l), pa));
                out.add(new GraphInput(LoraInputs.nameB(layer, l), inputs.shapeB(c, l), pb));
            }
        }
        return out;
    }
}
