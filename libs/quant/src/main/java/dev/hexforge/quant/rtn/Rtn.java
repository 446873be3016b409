package dev.hexforge.quant.rtn;

import dev.hexforge.quant.GroupQuantizer;
import dev.hexforge.quant.QuantSpec;
import dev.hexforge.quant.QuantizedLinear;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

import java.util.stream.IntStream;

/**
 * Round-to-nearest quantization in float32 with round-half-to-even, as the reference implementations do it.
 * Symmetric: {@code scale = max|w| / maxQ} (1 for an all-zero group), {@code q = clamp(round(w / scale), ±maxQ)}.
 * Asymmetric (AWQ's pseudo-quantizer): {@code scale = max(max - min, 1e-5) / maxQ},
 * {@code zero = clamp(-round(min / scale), 0, maxQ)}, {@code q = clamp(round(w / scale) + zero, 0, maxQ)}.
 *
 * <p>Groups are scanned and quantized with SIMD lanes; the results are bit-identical to
 * {@link GroupQuantizer#quantize} (same IEEE division, same rounding).
 */
public final class Rtn {
    private static final VectorSpecies<Float> F = FloatVector.SPECIES_PREFERRED;
    /** Adding then subtracting 1.5 * 2^23 rounds a float half to even, exactly, while |x| < 2^22. */
    private static final float ROUNDER = 12582912f;
    private static final float ROUNDER_LIMIT = 4194304f;
    /**
     * Long groups (a per-channel row) are walked in chunks: the SIMD loops are then entered often enough for the JIT
     * to compile them early in a run, which is what a one-shot quantization pays for.
     */
    private static final int CHUNK = 256;
    /** Weights smaller than this are quantized on the caller's thread alone. */
    private static final long PARALLEL_FROM = 1 << 16;

    private Rtn() {
    }

    /** Quantizes a row-major [out, in] weight. */
    public static QuantizedLinear quantize(float[] w, int out, int in, QuantSpec spec) {
        if (w.length != out * in) {
            throw new IllegalArgumentException("weight has " + w.length + " values, expected " + out + " x " + in);
        }
        int groups = spec.groups(in);
        byte[] q = new byte[out * in];
        float[] scales = new float[out * groups];
        byte[] zeros = spec.symmetric() ? null : new byte[out * groups];
        if ((long) out * in < PARALLEL_FROM) {
            // AWQ's clip search quantizes one group at a time, tens of thousands of times a layer
            quantizeRows(w, in, spec, 0, out, q, scales, zeros);
        } else {
            // rows are independent: blocks of them on every core give the same bytes as one thread
            int blocks = Math.min(out, Runtime.getRuntime().availableProcessors() * 4);
            IntStream.range(0, blocks).parallel().forEach(b ->
                    quantizeRows(w, in, spec, (int) ((long) out * b / blocks), (int) ((long) out * (b + 1) / blocks), q, scales, zeros));
        }
        return new QuantizedLinear(out, in, spec, q, scales, zeros);
    }

    private static void quantizeRows(float[] w, int in, QuantSpec spec, int rowFrom, int rowTo, byte[] q, float[] scales,
                                     byte[] zeros) {
        int groups = spec.groups(in);
        int g = spec.effectiveGroup(in);
        float[] lanes = new float[Math.min(g, CHUNK)];
        for (int o = rowFrom; o < rowTo; o++) {
            int row = o * in;
            for (int grp = 0; grp < groups; grp++) {
                int from = row + grp * g;
                int to = Math.min(row + in, from + g);
                float[] range = {Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY};
                for (int c = from; c < to; c += CHUNK) {
                    float[] part = minMax(w, c, Math.min(to, c + CHUNK));
                    range[0] = Math.min(range[0], part[0]);
                    range[1] = Math.max(range[1], part[1]);
                }
                GroupQuantizer.Params p = GroupQuantizer.fit(range[0], range[1], spec);
                scales[o * groups + grp] = p.scale();
                if (zeros != null) {
                    zeros[o * groups + grp] = (byte) p.zero();
                }
                float bound = Math.max(Math.abs(range[0]), Math.abs(range[1])) / p.scale();
                if (bound < ROUNDER_LIMIT) {
                    for (int c = from; c < to; c += CHUNK) {
                        quantizeLanes(w, c, Math.min(to, c + CHUNK), p, spec, lanes, q);
                    }
                } else {
                    for (int i = from; i < to; i++) {
                        q[i] = (byte) GroupQuantizer.quantize(w[i], p, spec);
                    }
                }
            }
        }
    }

    private static float[] minMax(float[] w, int from, int to) {
        int i = from;
        float max = Float.NEGATIVE_INFINITY;
        float min = Float.POSITIVE_INFINITY;
        int bound = from + F.loopBound(to - from);
        if (bound > from) {
            FloatVector vmax = FloatVector.broadcast(F, Float.NEGATIVE_INFINITY);
            FloatVector vmin = FloatVector.broadcast(F, Float.POSITIVE_INFINITY);
            for (; i < bound; i += F.length()) {
                FloatVector v = FloatVector.fromArray(F, w, i);
                vmax = vmax.max(v);
                vmin = vmin.min(v);
            }
            max = vmax.reduceLanes(VectorOperators.MAX);
            min = vmin.reduceLanes(VectorOperators.MIN);
        }
        for (; i < to; i++) {
            max = Math.max(max, w[i]);
            min = Math.min(min, w[i]);
        }
        return new float[]{min, max};
    }

    private static void quantizeLanes(float[] w, int from, int to, GroupQuantizer.Params p, QuantSpec spec,
                                      float[] lanes, byte[] q) {
        float scale = p.scale();
        float zero = p.zero();
        float lo = spec.symmetric() ? -spec.maxQ() : 0;
        float hi = spec.maxQ();
        int n = to - from;
        int bound = F.loopBound(n);
        int i = 0;
        for (; i < bound; i += F.length()) {
            FloatVector.fromArray(F, w, from + i).div(scale).add(ROUNDER).sub(ROUNDER).add(zero).max(lo).min(hi)
                    .intoArray(lanes, i);
        }
        for (; i < n; i++) {
            lanes[i] = GroupQuantizer.quantize(w[from + i], p, spec);
        }
        for (int k = 0; k < n; k++) {
            q[from + k] = (byte) (int) lanes[k];
        }
    }
}
