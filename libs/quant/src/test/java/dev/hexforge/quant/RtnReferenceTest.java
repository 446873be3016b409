package dev.hexforge.quant;

import dev.hexforge.checkpoint.Checkpoint;
import dev.hexforge.checkpoint.TensorNames;
import dev.hexforge.checkpoint.TensorNames.Linear;
import dev.hexforge.quant.rtn.Rtn;
import dev.hexforge.safetensors.SafetensorsFile;
import dev.hexforge.testing.Fixtures;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** RTN against the bit-level reference tensors of qwen2-tiny. */
class RtnReferenceTest {

    @Test
    void int8PerChannelMatchesTheReferenceBitForBit() {
        check("int8_per_channel.safetensors", QuantSpec.int8PerChannel());
    }

    @Test
    void int4AsymmetricGroup128MatchesTheReferenceBitForBit() {
        check("int4_g128.safetensors", QuantSpec.int4Group128());
    }

    private void check(String file, QuantSpec spec) {
        try (Checkpoint ckpt = Checkpoint.open(Fixtures.qwen2Tiny());
             SafetensorsFile ref = SafetensorsFile.open(Fixtures.reference("quant/" + file))) {
            int checked = 0;
            for (int l = 0; l < ckpt.config().numLayers(); l++) {
                for (Linear lin : Linear.values()) {
                    String w = TensorNames.weight(l, lin);
                    String base = w.substring(0, w.length() - ".weight".length());
                    long[] shape = ckpt.tensors().get(w);
                    float[] weights = ckpt.floats(w);
                    QuantizedLinear q = Rtn.quantize(weights, (int) shape[0], (int) shape[1], spec);
                    ByteBuffer qref = ref.bytes(base + ".qweight");
                    float[] scales = ref.floats(base + ".scale");
                    for (int i = 0; i < q.q().length; i++) {
                        int expected = spec.symmetric() ? qref.get(i) : qref.get(i) & 0xff;
                        assertEquals(expected, q.value(i / q.in(), i % q.in()), base + " value " + i);
                    }
                    for (int i = 0; i < scales.length; i++) {
                        assertEquals(scales[i], q.scales()[i], 0f, base + " scale " + i);
                    }
                    if (!spec.symmetric()) {
                        ByteBuffer zeros = ref.bytes(base + ".zero");
                        for (int i = 0; i < q.zeros().length; i++) {
                            assertEquals(zeros.get(i) & 0xff, q.zeros()[i] & 0xff, base + " zero " + i);
                        }
                    }
                    float[] deq = q.dequantize();
                    ByteBuffer refZeros = spec.symmetric() ? null : ref.bytes(base + ".zero");
                    for (int o = 0; o < q.out(); o++) {
                        for (int i = 0; i < q.in(); i++) {
                            int g = i / spec.effectiveGroup(q.in());
                            float expected = spec.symmetric()
                                    ? qref.get(o * q.in() + i) * scales[o]
                                    : ((qref.get(o * q.in() + i) & 0xff) - (refZeros.get(o * q.groups() + g) & 0xff))
                                    * scales[o * q.groups() + g];
                            assertEquals(expected, deq[o * q.in() + i], 1e-6f, base);
                        }
                    }
                    checked++;
                }
            }
            assertEquals(28, checked);
        }
    }

    @Test
    void shortLastGroupIsHandled() {
        float[] w = new float[2 * 96];
        for (int i = 0; i < w.length; i++) {
            w[i] = (float) Math.sin(i);
        }
        QuantizedLinear q = Rtn.quantize(w, 2, 96, QuantSpec.int4Group128());
        assertEquals(1, q.groups());
        QuantizedLinear q2 = Rtn.quantize(w, 2, 96, new QuantSpec(4, 64, false));
        assertEquals(2, q2.groups());
        float[] d = q2.dequantize();
        for (int i = 0; i < w.length; i++) {
            assertTrue(Math.abs(d[i] - w[i]) <= q2.scales()[(i / 96) * 2 + (i % 96) / 64] / 2 + 1e-6, "element " + i);
        }
    }

    @Test
    void allZeroRowsGetUnitScale() {
        QuantizedLinear q = Rtn.quantize(new float[16], 1, 16, QuantSpec.int8PerChannel());
        assertEquals(1f, q.scales()[0]);
    }

    @Test
    void senselessSpecsAreRefused() {
        assertThrows(QuantizationException.class, () -> new QuantSpec(1, 128, false));
        assertThrows(QuantizationException.class, () -> new QuantSpec(9, 128, false));
        assertThrows(QuantizationException.class, () -> new QuantSpec(4, 3, false));
        assertThrows(QuantizationException.class, () -> new QuantSpec(4, -1, false));
    }
}
