package dev.hexforge.quant.onnx;

import dev.hexforge.quant.QuantSpec;
import dev.hexforge.quant.QuantizedLinear;
import dev.hexforge.quant.rtn.Rtn;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;

/** The QDQ weight layout written tile by tile equals its definition: value (o, i) at [i, out], nibbles low first. */
class QdqLayoutTest {

    @ParameterizedTest
    @CsvSource({"8,0,true,37,53", "4,16,false,37,53", "4,32,true,130,67", "8,0,true,1,1"})
    void theTiledTransposeAndPackingEqualTheDefinition(int bits, int group, boolean symmetric, int out, int in) {
        SplittableRandom r = new SplittableRandom(out * 31L + in);
        float[] w = new float[out * in];
        for (int i = 0; i < w.length; i++) {
            w[i] = (float) r.nextGaussian();
        }
        QuantizedLinear q = Rtn.quantize(w, out, in, new QuantSpec(bits, group, symmetric));
        int[] expected = new int[in * out];
        for (int o = 0; o < out; o++) {
            for (int i = 0; i < in; i++) {
                expected[i * out + o] = q.value(o, i);
            }
        }
        byte[] t = QdqFormat.transposed(q);
        if (bits == 8) {
            byte[] e = new byte[expected.length];
            for (int i = 0; i < e.length; i++) {
                e[i] = (byte) expected[i];
            }
            assertArrayEquals(e, t);
        } else {
            assertArrayEquals(Nibbles.pack(expected), Nibbles.pack(t));
        }
    }
}
