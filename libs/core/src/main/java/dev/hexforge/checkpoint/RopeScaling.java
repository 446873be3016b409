package dev.hexforge.checkpoint;

import com.fasterxml.jackson.databind.JsonNode;

import java.util.ArrayList;
import java.util.List;

/**
 * A {@code rope_scaling} section Hexforge applies: none, or Llama 3's ({@code rope_type} "llama3"), which rescales the
 * inverse frequencies once: a wavelength {@code 2π / f} shorter than {@code original / highFreqFactor} is kept, one
 * longer than {@code original / lowFreqFactor} is divided by {@code factor}, and one in between is blended,
 * {@code s = (original / wavelength - lowFreqFactor) / (highFreqFactor - lowFreqFactor)},
 * {@code f' = (1 - s) · f / factor + s · f}. No attention scaling.
 *
 * @param type the rope type; {@link Type#NONE} carries no other values
 */
public record RopeScaling(Type type, double factor, double lowFreqFactor, double highFreqFactor,
                          int originalMaxPositionEmbeddings) {

    /** The rope types Hexforge applies; every other one in a config is refused by name. */
    public enum Type { NONE, LLAMA3 }

    /** The rope types of Hugging Face configs that are refused, with what they would need. */
    private static final List<String> REFUSED = List.of("linear", "dynamic", "yarn", "longrope", "su", "mrope");

    public static final RopeScaling NONE = new RopeScaling(Type.NONE, 1, 0, 0, 0);

    public RopeScaling {
        if (type == Type.LLAMA3) {
            List<String> problems = new ArrayList<>();
            if (!(factor >= 1) || !Double.isFinite(factor)) {
                problems.add("factor must be a finite number >= 1, got " + factor);
            }
            if (!(lowFreqFactor > 0) || !Double.isFinite(lowFreqFactor)) {
                problems.add("low_freq_factor must be a finite positive number, got " + lowFreqFactor);
            }
            if (!(highFreqFactor > lowFreqFactor) || !Double.isFinite(highFreqFactor)) {
                problems.add("high_freq_factor must be a finite number above low_freq_factor, got " + highFreqFactor);
            }
            if (originalMaxPositionEmbeddings <= 0) {
                problems.add("original_max_position_embeddings must be a positive integer, got " + originalMaxPositionEmbeddings);
            }
            if (!problems.isEmpty()) {
                throw new CheckpointException("config.json: rope_scaling (llama3): " + String.join("; ", problems));
            }
        }
    }

    public static RopeScaling llama3(double factor, double lowFreqFactor, double highFreqFactor, int original) {
        return new RopeScaling(Type.LLAMA3, factor, lowFreqFactor, highFreqFactor, original);
    }

    /** Reads {@code rope_scaling} (null, absent, or an object with {@code rope_type} or the older {@code type}). */
    static RopeScaling fromJson(JsonNode scaling) {
        if (scaling == null || scaling.isNull()) {
            return NONE;
        }
        if (!scaling.isObject()) {
            throw new CheckpointException("config.json: rope_scaling must be an object or null");
        }
        String type = scaling.path("rope_type").asText(scaling.path("type").asText(""));
        switch (type) {
            case "default":
                return NONE;
            case "llama3":
                List<String> missing = new ArrayList<>();
                for (String key : List.of("factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings")) {
                    if (!scaling.path(key).isNumber()) {
                        missing.add(key);
                    }
                }
                if (!missing.isEmpty()) {
                    throw new CheckpointException("config.json: rope_scaling of type 'llama3' needs numbers for " + missing);
                }
                return llama3(scaling.get("factor").asDouble(), scaling.get("low_freq_factor").asDouble(),
                        scaling.get("high_freq_factor").asDouble(), scaling.get("original_max_position_embeddings").asInt());
            default:
                String known = REFUSED.contains(type) ? "is not supported" : "is unknown";
                throw new CheckpointException("config.json: rope_scaling of type '" + type + "' " + known
                        + " (supported: none, 'default' and 'llama3'); convert a checkpoint without it");
        }
    }

    /**
     * Applies the scaling to default inverse frequencies, in float32 as Hugging Face computes it on a float32 tensor
     * (the factors and the original length are Python floats and ints, promoted to the tensor's float32).
     */
    public float[] apply(float[] invFreq) {
        if (type == Type.NONE) {
            return invFreq;
        }
        float fac = (float) factor;
        float low = (float) lowFreqFactor;
        float span = (float) (highFreqFactor - lowFreqFactor);
        float original = originalMaxPositionEmbeddings;
        float lowFreqWavelen = (float) (originalMaxPositionEmbeddings / lowFreqFactor);
        float highFreqWavelen = (float) (originalMaxPositionEmbeddings / highFreqFactor);
        float[] out = new float[invFreq.length];
        for (int i = 0; i < invFreq.length; i++) {
            float f = invFreq[i];
            float wavelen = (float) (2 * Math.PI) / f;
            float scaled = wavelen > lowFreqWavelen ? f / fac : f;
            if (!(wavelen < highFreqWavelen) && !(wavelen > lowFreqWavelen)) {
                float smooth = (original / wavelen - low) / span;
                scaled = (1 - smooth) * scaled / fac + smooth * scaled;
            }
            out[i] = scaled;
        }
        return out;
    }
}
