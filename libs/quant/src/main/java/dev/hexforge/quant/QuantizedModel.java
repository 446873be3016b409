package dev.hexforge.quant;

import dev.hexforge.checkpoint.Checkpoint;
import dev.hexforge.checkpoint.ModelConfig;
import dev.hexforge.checkpoint.TensorNames.Linear;
import dev.hexforge.checkpoint.TensorNames;
import dev.hexforge.forward.DecoderWeights;
import dev.hexforge.quant.rtn.Rtn;

import java.util.AbstractMap;
import java.util.AbstractSet;
import java.util.Collections;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Supplier;
import java.util.stream.Stream;

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
        linears = frozen(linears);
        replacedFloats = Collections.unmodifiableMap(new LinkedHashMap<>(replacedFloats));
        embeddings = frozen(embeddings);
        for (String name : embeddings.keySet()) {
            if (!name.equals(TensorNames.EMBED) && !(name.equals(TensorNames.LM_HEAD) && !config.tieWordEmbeddings())) {
                throw new IllegalArgumentException(name + " is not a quantizable embedding of this model");
            }
        }
    }

    /** A copy of an in-memory map; tensors kept in files are taken as they are (copying would read them all). */
    private static Map<String, QuantizedLinear> frozen(Map<String, QuantizedLinear> m) {
        return m instanceof StoredTensors ? m : Collections.unmodifiableMap(new LinkedHashMap<>(m));
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
        return withEmbeddings(base::embed, base::lmHead, headSpec, new LinkedHashMap<>());
    }

    /**
     * As {@link #withEmbeddings(DecoderWeights, QuantSpec)}, reading the two tensors from the checkpoint and putting
     * them into {@code into} (a {@link StoredTensors} keeps them off the heap).
     */
    public QuantizedModel withEmbeddings(Checkpoint ckpt, QuantSpec headSpec, Map<String, QuantizedLinear> into) {
        return withEmbeddings(() -> ckpt.floats(TensorNames.EMBED), () -> ckpt.floats(TensorNames.LM_HEAD), headSpec, into);
    }

    public QuantizedModel withEmbeddings(Checkpoint ckpt, QuantSpec headSpec) {
        return withEmbeddings(ckpt, headSpec, new LinkedHashMap<>());
    }

    private QuantizedModel withEmbeddings(Supplier<float[]> embed, Supplier<float[]> lmHead,
                                          QuantSpec headSpec, Map<String, QuantizedLinear> e) {
        if (headSpec == null) {
            return new QuantizedModel(config, spec, linears, replacedFloats, Map.of());
        }
        // a tensor the map holds already (an interrupted run's) is kept
        if (!e.containsKey(TensorNames.EMBED)) {
            e.put(TensorNames.EMBED, Rtn.quantize(embed.get(), config.vocabSize(), config.hiddenSize(), headSpec));
        }
        if (!config.tieWordEmbeddings() && !e.containsKey(TensorNames.LM_HEAD)) {
            e.put(TensorNames.LM_HEAD, Rtn.quantize(lmHead.get(), config.vocabSize(), config.hiddenSize(), headSpec));
        }
        return new QuantizedModel(config, spec, linears, replacedFloats, e);
    }

    /** The spec of the embedding and head, or null when they are float. */
    public QuantSpec headSpec() {
        if (embeddings.isEmpty()) {
            return null;
        }
        return shape(embeddings.keySet().iterator().next()).spec();
    }

    /** A quantized tensor's shape and spec (not reading a stored tensor), or null when the name is not quantized. */
    public QuantizedLinear.Shape shape(String name) {
        for (Map<String, QuantizedLinear> m : List.of(linears, embeddings)) {
            if (m instanceof StoredTensors stored) {
                QuantizedLinear.Shape s = stored.shape(name);
                if (s != null) {
                    return s;
                }
            } else if (m.containsKey(name)) {
                return m.get(name).shape();
            }
        }
        return null;
    }

    /** Every quantized tensor, linears then embeddings, by weight name; a view, reading stored tensors when asked. */
    public Map<String, QuantizedLinear> quantized() {
        return new AbstractMap<>() {
            @Override
            public QuantizedLinear get(Object name) {
                QuantizedLinear q = linears.get(name);
                return q != null ? q : embeddings.get(name);
            }

            @Override
            public boolean containsKey(Object name) {
                return linears.containsKey(name) || embeddings.containsKey(name);
            }

            @Override
            public Set<Entry<String, QuantizedLinear>> entrySet() {
                return new AbstractSet<>() {
                    @Override
                    public Iterator<Entry<String, QuantizedLinear>> iterator() {
                        return Stream.concat(linears.entrySet().stream(), embeddings.entrySet().stream()).iterator();
                    }

                    @Override
                    public int size() {
                        return linears.size() + embeddings.size();
                    }
                };
            }
        };
    }

    /** RTN over every decoder linear whose module name matches none of {@code keep} (e.g. "q_proj", "layers.0.mlp"). */
    public static QuantizedModel rtn(Checkpoint ckpt, QuantSpec spec, List<String> keep) {
        return rtn(ckpt, spec, keep, new LinkedHashMap<>());
    }

    /**
     * As {@link #rtn(Checkpoint, QuantSpec, List)}, putting each tensor into {@code out} as it is quantized; tensors
     * {@code out} holds already (an interrupted run's) are kept, not quantized again.
     */
    public static QuantizedModel rtn(Checkpoint ckpt, QuantSpec spec, List<String> keep, Map<String, QuantizedLinear> out) {
        ModelConfig c = ckpt.config();
        for (int l = 0; l < c.numLayers(); l++) {
            for (Linear lin : Linear.values()) {
                String name = TensorNames.weight(l, lin);
                if (isKept(name, keep) || out.containsKey(name)) {
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
