package dev.hexforge.onnx.runtime;

import java.nio.FloatBuffer;
import java.util.Arrays;

/**
 * The inputs of one run of a static graph ({@code seq} new positions over a cache of {@code ctx} slots, of which
 * {@code length} are filled): token ids padded with 0, positions, and the additive mask that lets position i see the
 * filled past slots and the new positions up to i. ONNX Runtime and a phone's qnn-net-run are fed the same.
 */
public final class StaticInputs {
    private StaticInputs() {
    }

    public static int[] ids(int[] chunk, int seq) {
        return Arrays.copyOf(chunk, seq);
    }

    public static int[] positions(int length, int seq, int ctx) {
        int[] pos = new int[seq];
        for (int i = 0; i < seq; i++) {
            pos[i] = Math.min(length + i, ctx - 1);
        }
        return pos;
    }

    /** [seq, ctx]: the first {@code ctx - seq} slots are the past, the last {@code seq} the new positions. */
    public static float[] mask(int length, int seq, int ctx, float negative) {
        int past = ctx - seq;
        float[] mask = new float[seq * ctx];
        for (int i = 0; i < seq; i++) {
            for (int j = 0; j < ctx; j++) {
                boolean allowed = j < past ? j < length : (j - past) <= i;
                mask[i * ctx + j] = allowed ? 0f : negative;
            }
        }
        return mask;
    }

    /**
     * A Genie graph's cos or sin input for {@code positions}: the first half of each position's row of a
     * [ctx, headDim] RoPE table ({@code cat(freqs, freqs)} per position), [seq, headDim / 2].
     */
    public static FloatBuffer ropeHalf(float[] table, int headDim, int[] positions) {
        int half = headDim / 2;
        FloatBuffer b = FloatBuffer.allocate(positions.length * half);
        for (int p : positions) {
            b.put(table, p * headDim, half);
        }
        return b.flip();
    }
}
