package dev.hexforge.quant;

/**
 * A quantized [out, in] weight: integer values (one per element, unpacked), a scale per (row, group) and, when
 * asymmetric, a zero point per (row, group). {@code W'[o][i] = (q[o][i] - zero[o][g]) * scale[o][g]}.
 */
public record QuantizedLinear(int out, int in, QuantSpec spec, byte[] q, float[] scales, byte[] zeros) {

    public int groups() {
        return spec.groups(in);
    }

    /** The value at (row, column) as an int: signed when symmetric, unsigned otherwise. */
    public int value(int row, int col) {
        byte b = q[row * in + col];
        return spec.symmetric() ? b : b & 0xff;
    }

    public int zero(int row, int group) {
        return zeros == null ? 0 : zeros[row * groups() + group] & 0xff;
    }

    public float scale(int row, int group) {
        return scales[row * groups() + group];
    }

    /** The float32 weight this represents, [out, in]. */
    public float[] dequantize() {
        float[] w = new float[out * in];
        int g = spec.effectiveGroup(in);
        for (int o = 0; o < out; o++) {
            for (int i = 0; i < in; i++) {
                int grp = i / g;
                w[o * in + i] = (value(o, i) - zero(o, grp)) * scale(o, grp);
            }
        }
        return w;
    }
}
