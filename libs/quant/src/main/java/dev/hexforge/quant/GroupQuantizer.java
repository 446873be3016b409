package dev.hexforge.quant;

/**
 * The per-group arithmetic every quantizer shares, in float32 with round-half-to-even: fitting a scale (and zero
 * point) to a group's range, and mapping a value to its integer.
 */
public final class GroupQuantizer {
    private GroupQuantizer() {
    }

    /** Scale and zero point of one group. */
    public record Params(float scale, int zero) {
    }

    /** Fits a group whose values span [min, max] (symmetric uses max(|min|, |max|)). */
    public static Params fit(float min, float max, QuantSpec spec) {
        int maxQ = spec.maxQ();
        if (spec.symmetric()) {
            float amax = Math.max(Math.abs(min), Math.abs(max));
            return new Params(amax == 0f ? 1f : amax / maxQ, 0);
        }
        float scale = Math.max(max - min, 1e-5f) / maxQ;
        return new Params(scale, clamp(round(-(min / scale)), 0, maxQ));
    }

    public static int quantize(float w, Params p, QuantSpec spec) {
        int maxQ = spec.maxQ();
        return spec.symmetric()
                ? clamp(round(w / p.scale()), -maxQ, maxQ)
                : clamp(round(w / p.scale()) + p.zero(), 0, maxQ);
    }

    public static float dequantize(int q, Params p) {
        return (q - p.zero()) * p.scale();
    }

    static int round(float v) {
        return (int) Math.rint(v);
    }

    static int clamp(int v, int lo, int hi) {
        return Math.max(lo, Math.min(hi, v));
    }
}
