package dev.hexforge.quant;

/**
 * How a linear's weight is quantized.
 *
 * @param bits      2 to 8
 * @param groupSize consecutive input columns sharing a scale; 0 for one scale per output row (per channel)
 * @param symmetric signed values around zero with no zero point; otherwise unsigned with a zero point per group
 */
public record QuantSpec(int bits, int groupSize, boolean symmetric) {
    public QuantSpec {
        if (bits < 2 || bits > 8) {
            throw new QuantizationException("bits must be between 2 and 8, got " + bits);
        }
        if (groupSize < 0) {
            throw new QuantizationException("group size must be 0 (per channel) or positive, got " + groupSize);
        }
        if (groupSize > 0 && groupSize < 8) {
            throw new QuantizationException("group size " + groupSize + " is too small to pay for its scales; use 8 or more, or 0 for per channel");
        }
    }

    /** INT8 symmetric per output channel. */
    public static QuantSpec int8PerChannel() {
        return new QuantSpec(8, 0, true);
    }

    /** INT4 asymmetric with groups of 128 input columns (AWQ's default). */
    public static QuantSpec int4Group128() {
        return new QuantSpec(4, 128, false);
    }

    /** Groups per row for {@code in} input columns (the last one shorter when in % group != 0). */
    public int groups(int in) {
        return groupSize == 0 ? 1 : (in + groupSize - 1) / groupSize;
    }

    public int effectiveGroup(int in) {
        return groupSize == 0 ? in : groupSize;
    }

    /** Largest quantized value: 2^(bits-1) - 1 when symmetric, 2^bits - 1 otherwise. */
    public int maxQ() {
        return symmetric ? (1 << (bits - 1)) - 1 : (1 << bits) - 1;
    }

    public String describe() {
        return "int" + bits + (symmetric ? " sym" : " asym") + (groupSize == 0 ? " per-channel" : " g" + groupSize);
    }
}
