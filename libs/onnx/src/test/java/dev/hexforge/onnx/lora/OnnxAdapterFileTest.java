package dev.hexforge.onnx.lora;

import ai.onnxruntime.OrtLoraAdapter;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The adapter file's bytes: what ONNX Runtime's own loader (and its FlatBuffers verifier) takes, and what is refused. */
class OnnxAdapterFileTest {
    private static final OnnxAdapterFile.Adapter TWO = new OnnxAdapterFile.Adapter(3, 7, List.of(
            OnnxAdapterFile.Parameter.ofFloats("a.lora_A.weight", new long[]{2, 3}, new float[]{1, 2, 3, 4, 5, 6}),
            OnnxAdapterFile.Parameter.ofFloats("a.lora_B.weight", new long[]{1, 2}, new float[]{-1, 0.5f})));

    @Test
    void onnxRuntimeLoadsWhatIsWrittenAndItReadsBack() throws Exception {
        byte[] bytes = OnnxAdapterFile.toBytes(TWO);
        try (OrtLoraAdapter loaded = OrtLoraAdapter.create(bytes)) {
            // ONNX Runtime verified the buffer; nothing more to ask of it here
        }
        OnnxAdapterFile.Adapter back = OnnxAdapterFile.parse("two", bytes);
        assertEquals(3, back.adapterVersion());
        assertEquals(7, back.modelVersion());
        assertEquals(2, back.parameters().size());
        assertArrayEquals(new long[]{2, 3}, back.parameter("a.lora_A.weight").dims());
        assertArrayEquals(new float[]{1, 2, 3, 4, 5, 6}, back.parameter("a.lora_A.weight").floats());
        assertArrayEquals(new float[]{-1, 0.5f}, back.parameter("a.lora_B.weight").floats());
        assertArrayEquals(bytes, OnnxAdapterFile.toBytes(back), "the same adapter, the same bytes");
    }

    @Test
    void brokenFilesAreRefusedNamingWhy() {
        byte[] good = OnnxAdapterFile.toBytes(TWO);
        assertRefused(new byte[0], "no \"TORT\" identifier");
        byte[] otherId = good.clone();
        otherId[4] = 'X';
        assertRefused(otherId, "no \"TORT\" identifier");
        assertRefused(Arrays.copyOf(good, good.length - 10), "not a well-formed ONNX Runtime adapter file");

        byte[] version = good.clone();
        ByteBuffer b = ByteBuffer.wrap(version).order(ByteOrder.LITTLE_ENDIAN);
        int table = b.getInt(0);
        b.putInt(table + 4, 2);
        assertRefused(version, "adapter format version 2");

        byte[] root = good.clone();
        ByteBuffer.wrap(root).order(ByteOrder.LITTLE_ENDIAN).putInt(0, 1 << 30);
        assertRefused(root, "points outside the file");

        OnnxAdapterFile.Adapter dup = new OnnxAdapterFile.Adapter(1, 1, List.of(TWO.parameters().get(0), TWO.parameters().get(0)));
        assertRefused(OnnxAdapterFile.toBytes(dup), "parameter 'a.lora_A.weight' appears twice");

        OnnxAdapterFile.Adapter lying = new OnnxAdapterFile.Adapter(1, 1, List.of(new OnnxAdapterFile.Parameter("x", new long[]{4, 4},
                OnnxAdapterFile.DataType.FLOAT, ByteBuffer.allocate(12))));
        assertRefused(OnnxAdapterFile.toBytes(lying), "parameter 'x': 12 bytes of data for [4, 4] FLOAT (64 expected)");
    }

    private static void assertRefused(byte[] bytes, String expected) {
        String m = assertThrows(AdapterFileException.class, () -> OnnxAdapterFile.parse("f.onnx_adapter", bytes)).getMessage();
        assertTrue(m.startsWith("f.onnx_adapter: ") && m.contains(expected), m);
    }
}
