package dev.hexforge.quant.rtn;

import dev.hexforge.quant.GroupQuantizer;
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
        for (int o = 0; o < out; o++) {
            int row = o * in;
            for (int grp = 0; grp < groups; grp++) {
                int from = grp * g;
                int to = Math.min(in, from + g);
                float max = Float.NEGATIVE_INFINITY;
                float min = Float.POSITIVE_INFINITY;
                for (int i = from; i < to; i++) {
                    max = Math.max(max, w[row + i]);
                    min = Math.min(min, w[row + i]);
                }
                GroupQuantizer.Params p = GroupQuantizer.fit(min, max, spec);
                scales[o * groups + grp] = p.scale();
                if (zeros != null) {
                    zeros[o * groups + grp] = (byte) p.zero();
                }
                for (int i = from; i < to; i++) {
                    q[row + i] = (byte) GroupQuantizer.quantize(w[row + i], p, spec);
                }
            }
        }
        return new QuantizedLinear(out, in, spec, q, scales, zeros);
    }
}
