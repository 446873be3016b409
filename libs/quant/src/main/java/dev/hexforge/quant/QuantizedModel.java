package dev.hexforge.quant;

import dev.hexforge.checkpoint.Checkpoint;
import dev.hexforge.checkpoint.ModelConfig;
import dev.hexforge.checkpoint.TensorNames;
import dev.hexforge.checkpoint.TensorNames.Linear;
import dev.hexforge.forward.DecoderWeights;
import dev.hexforge.quant.rtn.Rtn;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The quantized linears of a decoder, by Hugging Face weight name. Linears not in the map (kept in float by a
 * {@code keep} pattern) stay as they are; embeddings, norms, biases and the head are never quantized. Float tensors a
 * method rewrote (AWQ's folded norms) are in {@code replacedFloats}.
 */
public record QuantizedModel(ModelConfig config, QuantSpec spec, Map<String, QuantizedLinear> linears,
                             Map<String, float[]> replacedFloats) {

    public QuantizedModel {
        linears = Collections.unmodifiableMap(new LinkedHashMap<>(linears));
        replacedFloats = Collections.unmodifiableMap(new LinkedHashMap<>(replacedFloats));
    }

    public QuantizedModel(ModelConfig config, QuantSpec spec, Map<String, QuantizedLinear> linears) {
        this(config, spec, linears, Map.of());
    }

    /** RTN over every decoder linear whose module name matches none of {@code keep} (e.g. "q_proj", "layers.0.mlp"). */
    public static QuantizedModel rtn(Checkpoint ckpt, QuantSpec spec, List<String> keep) {
        ModelConfig c = ckpt.config();
        Map<String, QuantizedLinear> out = new LinkedHashMap<>();
        for (int l = 0; l < c.numLayers(); l++) {
            for (Linear lin : Linear.values()) {
                String name = TensorNames.weight(l, lin);
                if (isKept(name, keep)) {
                    continue;
                }
                long[] shape = ckpt.tensors().get(name);
                out.put(name, Rtn.quantize(ckpt.floats(name), (int) shape[0], (int) shape[1], spec));
            }
        }
        return new QuantizedModel(c, spec, out);
    }

    static boolean isKept(String weightName, List<String> keep) {
        return keep.stream().anyMatch(p -> weightName.contains(p));
    }

    public QuantizedLinear get(int layer, Linear linear) {
        return linears.get(TensorNames.weight(layer, linear));
    }

    /** The float weights with every quantized linear replaced by its dequantized value (fake quantization). */
    public DecoderWeights fakeQuantized(DecoderWeights base) {
        return base.withReplacements(replacedFloats).withLinears((l, lin) -> {
            QuantizedLinear q = get(l, lin);
            return q == null ? null : q.dequantize();
        });
    }
}
