package dev.hexforge.quant.rtn;

import dev.hexforge.quant.QuantSpec;
import dev.hexforge.quant.QuantizedLinear;

/**
 * Round-to-nearest quantization in float32 with round-half-to-even, as the reference implementations do it.
 * Symmetric: {@code scale = max|w| / maxQ} (1 for an all-zero group), {@code q = clamp(round(w / scale), ±maxQ)}.
 * Asymmetric (AWQ's pseudo-quantizer): {@code scale = max(max - min, 1e-5) / maxQ},
 * {@code zero = clamp(-round(min / scale), 0, maxQ)}, {@code q = clamp(round(w / scale) + zero, 0, maxQ)}.
 */
public final class Rtn {
    private Rtn() {
    }

    /** Quantizes a row-major [out, in] weight. */
    public static QuantizedLinear quantize(float[] w, int out, int in, QuantSpec spec) {
        if (w.length != out * in) {
            throw new IllegalArgumentException("weight has " + w.length + " values, expected " + out + " x " + in);
        }
        int groups = spec.groups(in);
        int g = spec.effectiveGroup(in);
        byte[] q = new byte[out * in];
        float[] scales = new float[out * groups];
        byte[] zeros = spec.symmetric() ? null : new byte[out * groups];
        int maxQ = spec.maxQ();
        for (int o = 0; o < out; o++) {
            int row = o * in;
            for (int grp = 0; grp < groups; grp++) {
                int from = grp * g;
                int to = Math.min(in, from + g);
                if (spec.symmetric()) {
                    float amax = 0f;
                    for (int i = from; i < to; i++) {
                        amax = Math.max(amax, Math.abs(w[row + i]));
                    }
                    float scale = amax == 0f ? 1f : amax / maxQ;
                    scales[o * groups + grp] = scale;
                    for (int i = from; i < to; i++) {
                        q[row + i] = (byte) clamp(round(w[row + i] / scale), -maxQ, maxQ);
                    }
                } else {
                    float max = Float.NEGATIVE_INFINITY;
                    float min = Float.POSITIVE_INFINITY;
                    for (int i = from; i < to; i++) {
                        max = Math.max(max, w[row + i]);
                        min = Math.min(min, w[row + i]);
                    }
                    float scale = Math.max(max - min, 1e-5f) / maxQ;
                    int zero = clamp(-round(min / scale), 0, maxQ);
                    scales[o * groups + grp] = scale;
                    zeros[o * groups + grp] = (byte) zero;
                    for (int i = from; i < to; i++) {
                        q[row + i] = (byte) clamp(round(w[row + i] / scale) + zero, 0, maxQ);
                    }
                }
            }
        }
        return new QuantizedLinear(out, in, spec, q, scales, zeros);
    }

    static int round(float v) {
        return (int) Math.rint(v);
    }

    static int clamp(int v, int lo, int hi) {
        return Math.max(lo, Math.min(hi, v));
    }
}
