package dev.hexforge.quant;

/**
 * A quantized [out, in] weight: integer values (one per element, unpacked), a scale per (row, group) and, when
 * asymmetric, a zero point per (row, group). {@code W'[o][i] = (q[o][i] - zero[o][g]) * scale[o][g]}.
 */
public record QuantizedLinear(int out, int in, QuantSpec spec, byte[] q, float[] scales, byte[] zeros) {

    /** What a quantized tensor is without its values: [out, in] under a spec. */
    public record Shape(int out, int in, QuantSpec spec) {
    }

    public Shape shape() {
        return new Shape(out, in, spec);
    }

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
        int groups = groups();
        int g = spec.effectiveGroup(in);
        boolean signed = spec.symmetric();
        for (int o = 0; o < out; o++) {
            int row = o * in;
            for (int grp = 0; grp < groups; grp++) {
                float s = scales[o * groups + grp];
                int z = zeros == null ? 0 : zeros[o * groups + grp] & 0xff;
                int end = row + Math.min(in, (grp + 1) * g);
                if (signed) {
                    for (int i = row + grp * g; i < end; i++) {
                        w[i] = (q[i] - z) * s;
                    }
                } else {
                    for (int i = row + grp * g; i < end; i++) {
                        w[i] = ((q[i] & 0xff) - z) * s;
                    }
                }
            }
        }
        return w;
    }
}
