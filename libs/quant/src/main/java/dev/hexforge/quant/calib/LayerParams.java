package dev.hexforge.quant.calib;

import dev.hexforge.checkpoint.TensorNames.Linear;
import dev.hexforge.forward.DecoderWeights;

import java.util.EnumMap;
import java.util.Map;

/** One decoder layer's weights as a working copy that a quantizer may change (weights, norms) while it runs. */
public final class LayerParams {
    public float[] inputNorm;
    public float[] postAttentionNorm;
    /** Qwen3's per-head q and k norm weights [head_dim]; null for a family without them. */
    public float[] qNorm;
    public float[] kNorm;
    public final Map<Linear, float[]> weights = new EnumMap<>(Linear.class);
    public final Map<Linear, float[]> biases = new EnumMap<>(Linear.class);

    /** A deep copy: a pass may change the copy's arrays and keep these. */
    public LayerParams copy() {
        LayerParams p = new LayerParams();
        p.inputNorm = inputNorm.clone();
        p.postAttentionNorm = postAttentionNorm.clone();
        p.qNorm = qNorm == null ? null : qNorm.clone();
        p.kNorm = kNorm == null ? null : kNorm.clone();
        weights.forEach((lin, w) -> p.weights.put(lin, w.clone()));
        biases.forEach((lin, b) -> p.biases.put(lin, b.clone()));
        return p;
    }

    public static LayerParams copyOf(DecoderWeights.Layer l) {
        LayerParams p = new LayerParams();
        p.inputNorm = l.inputNorm().clone();
        p.postAttentionNorm = l.postAttentionNorm().clone();
        if (l.headNorms() != null) {
            p.qNorm = l.headNorms().q().clone();
            p.kNorm = l.headNorms().k().clone();
        }
        for (Linear lin : Linear.values()) {
            p.weights.put(lin, l.weight(lin).clone());
            if (l.bias(lin) != null) {
                p.biases.put(lin, l.bias(lin).clone());
            }
        }
        return p;
    }
}
