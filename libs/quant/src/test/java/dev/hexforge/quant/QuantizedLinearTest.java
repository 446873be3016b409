package dev.hexforge.quant;

import org.junit.jupiter.api.Test;

import java.util.Arrays;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

class QuantizedLinearTest {

    /** The checkpoint writer and the reports dequantize a piece at a time: any cut gives the whole tensor's values. */
    @Test
    void piecesOfTheDequantizedWeightAreTheWholeOnesValues() {
        Random r = new Random(3);
        for (QuantSpec spec : new QuantSpec[]{new QuantSpec(4, 32, false), new QuantSpec(8, 0, true), new QuantSpec(4, 64, true)}) {
            int out = 5;
            int in = 96;
            int groups = spec.groups(in);
            byte[] q = new byte[out * in];
            r.nextBytes(q);
            float[] scales = new float[out * groups];
            for (int i = 0; i < scales.length; i++) {
                scales[i] = r.nextFloat() / 10;
            }
            byte[] zeros = null;
            if (!spec.symmetric()) {
                zeros = new byte[out * groups];
                r.nextBytes(zeros);
            }
            QuantizedLinear l = new QuantizedLinear(out, in, spec, q, scales, zeros);
            float[] whole = l.dequantize();
            for (int o = 0; o < out; o++) {
                for (int i = 0; i < in; i++) {
                    int grp = i / spec.effectiveGroup(in);
                    assertEquals((l.value(o, i) - l.zero(o, grp)) * l.scale(o, grp), whole[o * in + i], 0f, spec + " at " + o + "," + i);
                }
            }
            for (int piece : new int[]{1, 7, 31, 96, 100, 479}) {
                float[] joined = new float[whole.length];
                float[] buf = new float[piece];
                for (int from = 0; from < whole.length; from += piece) {
                    int n = Math.min(piece, whole.length - from);
                    Arrays.fill(buf, Float.NaN);
                    l.dequantize(from, buf, n);
                    System.arraycopy(buf, 0, joined, from, n);
                }
                assertArrayEquals(whole, joined, spec + " in pieces of " + piece);
            }
        }
    }
}
