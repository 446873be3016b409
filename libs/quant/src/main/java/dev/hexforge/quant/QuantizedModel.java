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
 * The quantized tensors of a decoder, by Hugging Face weight name. {@code linears}: the decoder layers' linears under
 * {@code spec}; those not in the map (kept in float by a {@code keep} pattern) stay as they are. {@code embeddings}:
 * the token embedding and, when untied, the LM head, each under its own spec (RTN, INT8 per channel by default); a
 * tied model's one tensor serves both the lookup and the head. Norms and biases are never quantized. Float tensors a
 * method rewrote (AWQ's folded norms) are in {@code replacedFloats}.
 */
public record QuantizedModel(ModelConfig config, QuantSpec spec, Map<String, QuantizedLinear> linears,
                             Map<String, float[]> replacedFloats, Map<String, QuantizedLinear> embeddings) {

    public QuantizedModel {
        linears = Collections.unmodifiableMap(new LinkedHashMap<>(linears));
        replacedFloats = Collections.unmodifiableMap(new LinkedHashMap<>(replacedFloats));
        embeddings = Collections.unmodifiableMap(new LinkedHashMap<>(embeddings));
        for (String name : embeddings.keySet()) {
            if (!name.equals(TensorNames.EMBED) && !(name.equals(TensorNames.LM_HEAD) && !config.tieWordEmbeddings())) {
                throw new IllegalArgumentException(name + " is not a quantizable embedding of this model");
            }
        }
    }

    public QuantizedModel(ModelConfig config, QuantSpec spec, Map<String, QuantizedLinear> linears,
                          Map<String, float[]> replacedFloats) {
        this(config, spec, linears, replacedFloats, Map.of());
    }

    public QuantizedModel(ModelConfig config, QuantSpec spec, Map<String, QuantizedLinear> linears) {
        this(config, spec, linears, Map.of(), Map.of());
    }

    /**
     * This model with its token embedding and LM head quantized by RTN under {@code headSpec} (one tensor when tied,
     * two otherwise); null leaves them in float.
     */
    public QuantizedModel withEmbeddings(DecoderWeights base, QuantSpec headSpec) {
        return withEmbeddings(base::embed, base::lmHead, headSpec);
    }

    /** As {@link #withEmbeddings(DecoderWeights, QuantSpec)}, reading the two tensors from the checkpoint. */
    public QuantizedModel withEmbeddings(Checkpoint ckpt, QuantSpec headSpec) {
        return withEmbeddings(() -> ckpt.floats(TensorNames.EMBED), () -> ckpt.floats(TensorNames.LM_HEAD), headSpec);
    }

    private QuantizedModel withEmbeddings(java.util.function.Supplier<float[]> embed, java.util.function.Supplier<float[]> lmHead,
                                          QuantSpec headSpec) {
        if (headSpec == null) {
            return new QuantizedModel(config, spec, linears, replacedFloats, Map.of());
        }
        Map<String, QuantizedLinear> e = new LinkedHashMap<>();
        e.put(TensorNames.EMBED, Rtn.quantize(embed.get(), config.vocabSize(), config.hiddenSize(), headSpec));
        if (!config.tieWordEmbeddings()) {
            e.put(TensorNames.LM_HEAD, Rtn.quantize(lmHead.get(), config.vocabSize(), config.hiddenSize(), headSpec));
        }
        return new QuantizedModel(config, spec, linears, replacedFloats, e);
    }

    /** The spec of the embedding and head, or null when they are float. */
    public QuantSpec headSpec() {
        return embeddings.isEmpty() ? null : embeddings.values().iterator().next().spec();
    }

    /** Every quantized tensor, linears then embeddings, by weight name. */
    public Map<String, QuantizedLinear> quantized() {
        Map<String, QuantizedLinear> all = new LinkedHashMap<>(linears);
        all.putAll(embeddings);
        return all;
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

    /** The float weights with every quantized tensor replaced by its dequantized value (fake quantization). */
    public DecoderWeights fakeQuantized(DecoderWeights base) {
        Map<String, float[]> floats = new LinkedHashMap<>(replacedFloats);
        embeddings.forEach((name, q) -> floats.put(name, q.dequantize()));
        return base.withReplacements(floats).withLinears((l, lin) -> {
            QuantizedLinear q = get(l, lin);
            return q == null ? null : q.dequantize();
        });
    }
}
