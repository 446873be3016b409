package dev.hexforge.lora;

import dev.hexforge.checkpoint.ModelConfig;
import dev.hexforge.checkpoint.TensorNames;
import dev.hexforge.checkpoint.TensorNames.Linear;
import dev.hexforge.forward.DecoderWeights;
import dev.hexforge.forward.DecoderWeights.LowRankDelta;
import dev.hexforge.safetensors.SafetensorsException;
import dev.hexforge.safetensors.SafetensorsFile;
import dev.hexforge.safetensors.TensorInfo;

import dev.hexforge.safetensors.DType;
import dev.hexforge.safetensors.SafetensorsWriter;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;

/**
 * A PEFT LoRA adapter checked against its base model: every tensor named
 * {@code base_model.model.model.layers.{i}.{module}.lora_A|lora_B.weight} with A [r, in] and B [out, r].
 */
public record LoraAdapter(LoraConfig config, Map<String, LowRankDelta> deltas) {
    public static final String WEIGHTS = "adapter_model.safetensors";
    static final String PREFIX = "base_model.model.";

    /** Key of a delta: the base weight's name, e.g. {@code model.layers.0.self_attn.q_proj.weight}. */
    public LowRankDelta delta(int layer, Linear linear) {
        return deltas.get(TensorNames.weight(layer, linear));
    }

    public static String tensorName(int layer, Linear linear, char ab) {
        return PREFIX + TensorNames.layer(layer) + linear.module() + ".lora_" + ab + ".weight";
    }

    public static LoraAdapter read(Path dir, ModelConfig base) {
        LoraConfig cfg = LoraConfig.read(dir);
        Set<String> known = new HashSet<>();
        for (Linear l : Linear.values()) {
            known.add(l.shortName());
        }
        for (String t : cfg.targetModules()) {
            if (!known.contains(t)) {
                throw new LoraException(LoraConfig.FILE + ": target module '" + t + "' does not exist in a "
                        + base.architecture().modelType() + " decoder (modules: " + known + ")");
            }
        }
        Path file = dir.resolve(WEIGHTS);
        if (!Files.isRegularFile(file)) {
            throw new LoraException(dir + ": no " + WEIGHTS);
        }
        Map<String, LowRankDelta> deltas = new LinkedHashMap<>();
        try (SafetensorsFile f = SafetensorsFile.open(file)) {
            Set<String> used = new HashSet<>();
            for (int l = 0; l < base.numLayers(); l++) {
                for (Linear lin : Linear.values()) {
                    if (!cfg.targetModules().contains(lin.shortName())) {
                        continue;
                    }
                    String a = tensorName(l, lin, 'A');
                    String b = tensorName(l, lin, 'B');
                    if (!f.contains(a) || !f.contains(b)) {
                        throw new LoraException(WEIGHTS + ": missing " + (f.contains(a) ? b : a));
                    }
                    long[] w = base.linearShape(lin);
                    check(f.info(a), new long[]{cfg.r(), w[1]});
                    check(f.info(b), new long[]{w[0], cfg.r()});
                    deltas.put(TensorNames.weight(l, lin), new LowRankDelta(f.floats(a), f.floats(b), cfg.r(), cfg.scale()));
                    used.add(a);
                    used.add(b);
                }
            }
            for (TensorInfo t : f.tensors()) {
                if (!used.contains(t.name())) {
                    throw new LoraException(WEIGHTS + ": tensor '" + t.name() + "' belongs to no target module of this model");
                }
            }
        } catch (SafetensorsException e) {
            throw new LoraException(e.getMessage(), e);
        }
        return new LoraAdapter(cfg, deltas);
    }

    private static void check(TensorInfo t, long[] expected) {
        if (!Arrays.equals(t.shape(), expected)) {
            throw new LoraException(WEIGHTS + ": tensor '" + t.name() + "' has shape " + t.shapeString()
                    + " but the base model needs " + Arrays.toString(expected));
        }
    }

    /**
     * Writes {@code adapter_config.json} and {@code adapter_model.safetensors} (float32 A [r, in] and B [out, r]
     * under PEFT's names) into {@code dir}; each file is written beside its final name and moved into place.
     */
    public void write(Path dir) {
        try {
            Files.createDirectories(dir);
            List<SafetensorsWriter.Entry> entries = new ArrayList<>();
            for (Map.Entry<String, LowRankDelta> e : deltas.entrySet()) {
                String module = e.getKey().substring(0, e.getKey().length() - ".weight".length());
                LowRankDelta d = e.getValue();
                int in = d.a().length / d.rank();
                int out = d.b().length / d.rank();
                entries.add(SafetensorsWriter.Entry.ofFloats(PREFIX + module + ".lora_A.weight", new long[]{d.rank(), in},
                        d.a(), DType.F32));
                entries.add(SafetensorsWriter.Entry.ofFloats(PREFIX + module + ".lora_B.weight", new long[]{out, d.rank()},
                        d.b(), DType.F32));
            }
            Path weights = dir.resolve(WEIGHTS + ".partial");
            SafetensorsWriter.write(weights, Map.of("format", "pt"), entries);
            Files.move(weights, dir.resolve(WEIGHTS), StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            Path cfg = dir.resolve(LoraConfig.FILE + ".partial");
            Files.writeString(cfg, config.toPeftJson());
            Files.move(cfg, dir.resolve(LoraConfig.FILE), StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            throw new UncheckedIOException("writing the adapter to " + dir + ": " + e.getMessage(), e);
        }
    }

    /** The base weights with this adapter attached, unmerged. */
    public DecoderWeights applyTo(DecoderWeights base) {
        return base.withAdapters(this::delta);
    }

    /** {@code W + scale · (B @ A)} in float32. */
    public static float[] merged(float[] w, LowRankDelta d) {
        int r = d.rank();
        int in = d.a().length / r;
        int out = d.b().length / r;
        float[] m = w.clone();
        for (int o = 0; o < out; o++) {
            for (int i = 0; i < in; i++) {
                float s = 0f;
                for (int k = 0; k < r; k++) {
                    s += d.b()[o * r + k] * d.a()[k * in + i];
                }
                m[o * in + i] += s * d.scale();
            }
        }
        return m;
    }
}
