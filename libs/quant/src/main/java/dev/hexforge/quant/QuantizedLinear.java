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
        dequantize(0, w, w.length);
        return w;
    }

    /** {@code count} values of the float32 weight, from flat (row-major) index {@code from}, into {@code into[0..count)}. */
    public void dequantize(int from, float[] into, int count) {
        int groups = groups();
        int g = spec.effectiveGroup(in);
        boolean signed = spec.symmetric();
        int end = from + count;
        for (int i = from; i < end; ) {
            int o = i / in;
            int grp = (i - o * in) / g;
            int stop = Math.min(end, o * in + Math.min(in, (grp + 1) * g));
            float s = scales[o * groups + grp];
            int z = zeros == null ? 0 : zeros[o * groups + grp] & 0xff;
            if (signed) {
                for (; i < stop; i++) {
                    into[i - from] = (q[i] - z) * s;
                }
            } else {
                for (; i < stop; i++) {
                    into[i - from] = ((q[i] & 0xff) - z) * s;
                }
            }
        }
    }
}
