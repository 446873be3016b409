package dev.hexforge.safetensors;

import dev.hexforge.testing.Fixtures;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class SafetensorsFileTest {
    @TempDir
    Path dir;

    /** A raw file: header JSON (padded) then {@code dataBytes} zero bytes. */
    Path raw(String header, int dataBytes) throws IOException {
        byte[] h = header.getBytes(StandardCharsets.UTF_8);
        ByteBuffer b = ByteBuffer.allocate(8 + h.length + dataBytes).order(ByteOrder.LITTLE_ENDIAN);
        b.putLong(h.length).put(h);
        Path p = dir.resolve("bad.safetensors");
        Files.write(p, b.array());
        return p;
    }

    String refused(Path p) {
        return assertThrows(SafetensorsException.class, () -> SafetensorsFile.open(p).close()).getMessage();
    }

    @Test
    void readsTheFixtureModel() {
        try (SafetensorsFile f = SafetensorsFile.open(Fixtures.qwen2Tiny().resolve("model.safetensors"))) {
            assertEquals(50, f.tensors().size());
            assertEquals(Map.of("format", "pt"), f.metadata());
            assertArrayEquals(new long[]{2048, 128}, f.info("model.embed_tokens.weight").shape());
            assertEquals(2048 * 128, f.floats("model.embed_tokens.weight").length);
        }
    }

    @Test
    void writerRoundTripsEveryFloatDtypeAndMetadata() {
        float[] v = {0f, 1.5f, -2.25f, 65504f, 0.0009765625f, -0f};
        Path p = dir.resolve("rt.safetensors");
        SafetensorsWriter.write(p, Map.of("format", "pt"), List.of(
                SafetensorsWriter.Entry.ofFloats("a", new long[]{2, 3}, v, DType.F32),
                SafetensorsWriter.Entry.ofFloats("b", new long[]{6}, v, DType.BF16),
                SafetensorsWriter.Entry.ofFloats("c", new long[]{6}, v, DType.F16),
                SafetensorsWriter.Entry.ofBytes("scalar", DType.I64, new long[]{}, ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(0, 7)),
                SafetensorsWriter.Entry.ofBytes("empty", DType.U8, new long[]{0, 4}, ByteBuffer.allocate(0))));
        try (SafetensorsFile f = SafetensorsFile.open(p)) {
            assertArrayEquals(v, f.floats("a"));
            assertArrayEquals(v, f.floats("c"));
            float[] bf = f.floats("b");
            for (int i = 0; i < v.length; i++) {
                assertEquals(v[i], bf[i], Math.abs(v[i]) / 128 + 1e-6f);
            }
            assertEquals(7L, f.bytes("scalar").getLong(0));
            assertEquals(0, f.info("empty").numel());
            assertEquals("pt", f.metadata().get("format"));
        }
        assertFalse(Files.exists(dir.resolve("rt.safetensors.partial")));
    }

    @Test
    void truncatedFile() throws IOException {
        Path p = dir.resolve("t.safetensors");
        Files.write(p, new byte[5]);
        assertTrue(refused(p).contains("truncated"));
    }

    @Test
    void headerLengthPastEndOfFile() throws IOException {
        Path p = dir.resolve("h.safetensors");
        ByteBuffer b = ByteBuffer.allocate(16).order(ByteOrder.LITTLE_ENDIAN).putLong(1000).put("{}      ".getBytes());
        Files.write(p, b.array());
        String m = refused(p);
        assertTrue(m.contains("header length 1000 runs past the end"), m);
    }

    @Test
    void dataTruncated() throws IOException {
        String m = refused(raw("{\"w\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", 8));
        assertTrue(m.contains("truncated") && m.contains("16"), m);
    }

    @Test
    void overlappingOffsets() throws IOException {
        String m = refused(raw("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                + "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 12));
        assertTrue(m.contains("'b'") && m.contains("overlap"), m);
    }

    @Test
    void holeBetweenTensors() throws IOException {
        String m = refused(raw("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                + "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}", 12));
        assertTrue(m.contains("hole") && m.contains("'b'"), m);
    }

    @Test
    void outOfOrderOffsetsAreFineWhenContiguous() throws IOException {
        Path p = raw("{\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]},"
                + "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 8);
        try (SafetensorsFile f = SafetensorsFile.open(p)) {
            assertEquals(2, f.tensors().size());
        }
    }

    @Test
    void reversedOffsets() throws IOException {
        String m = refused(raw("{\"a\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[4,0]}}", 4));
        assertTrue(m.contains("'a'") && m.contains("reversed"), m);
    }

    @Test
    void byteCountDisagreesWithDtypeAndShape() throws IOException {
        String m = refused(raw("{\"w\":{\"dtype\":\"BF16\",\"shape\":[3,2],\"data_offsets\":[0,8]}}", 8));
        assertTrue(m.contains("'w'") && m.contains("needs 12 bytes"), m);
    }

    @Test
    void unknownDtype() throws IOException {
        String m = refused(raw("{\"w\":{\"dtype\":\"F12\",\"shape\":[1],\"data_offsets\":[0,2]}}", 2));
        assertTrue(m.contains("'w'") && m.contains("dtype"), m);
    }

    @Test
    void negativeDimension() throws IOException {
        String m = refused(raw("{\"w\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,0]}}", 0));
        assertTrue(m.contains("'w'") && m.contains("non-negative"), m);
    }

    @Test
    void duplicateTensorNames() throws IOException {
        String m = refused(raw("{\"w\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
                + "\"w\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1,2]}}", 2));
        assertTrue(m.toLowerCase().contains("duplicate"), m);
    }

    @Test
    void headerIsNotJson() throws IOException {
        assertTrue(refused(raw("{not json", 0)).contains("not valid JSON"));
        assertTrue(refused(raw("[1,2,3]", 0)).contains("does not start with '{'"));
    }

    @Test
    void trailingBytesAfterTheLastTensor() throws IOException {
        String m = refused(raw("{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}", 5));
        assertTrue(m.contains("trailing"), m);
    }

    @Test
    void shardedIndexMustNameExistingShardsAndTensors() throws IOException {
        Path shard = dir.resolve("model-00001-of-00001.safetensors");
        SafetensorsWriter.write(shard, Map.of(), List.of(SafetensorsWriter.Entry.ofFloats("x", new long[]{1}, new float[]{1}, DType.F32)));
        Files.writeString(dir.resolve(TensorStore.INDEX_FILE),
                "{\"metadata\":{},\"weight_map\":{\"x\":\"model-00001-of-00001.safetensors\",\"y\":\"model-00002-of-00002.safetensors\"}}");
        String m = assertThrows(SafetensorsException.class, () -> TensorStore.open(dir)).getMessage();
        assertTrue(m.contains("model-00002-of-00002.safetensors") && m.contains("does not exist"), m);

        Files.writeString(dir.resolve(TensorStore.INDEX_FILE),
                "{\"weight_map\":{\"x\":\"../model.safetensors\"}}");
        m = assertThrows(SafetensorsException.class, () -> TensorStore.open(dir)).getMessage();
        assertTrue(m.contains("not a plain file name"), m);

        Files.writeString(dir.resolve(TensorStore.INDEX_FILE), "{\"weight_map\":{\"x\":\"model-00001-of-00001.safetensors\"}}");
        try (TensorStore s = TensorStore.open(dir)) {
            assertEquals(List.of("x"), List.copyOf(s.names()));
            assertTrue(Arrays.equals(new float[]{1}, s.floats("x")));
        }
    }

    @Test
    void aShardIndexNamingATensorTwiceOrAShardOutsideTheFolderIsRefused() throws IOException {
        Path shard = dir.resolve("model-00001-of-00001.safetensors");
        SafetensorsWriter.write(shard, Map.of(), List.of(SafetensorsWriter.Entry.ofFloats("x", new long[]{1}, new float[]{1}, DType.F32)));
        Files.writeString(dir.resolve(TensorStore.INDEX_FILE),
                "{\"weight_map\":{\"x\":\"model-00001-of-00001.safetensors\",\"x\":\"model-00001-of-00001.safetensors\"}}");
        String m = assertThrows(SafetensorsException.class, () -> TensorStore.open(dir)).getMessage();
        assertTrue(m.contains("listed twice") && m.contains("'x'"), m);

        Path elsewhere = Files.createDirectories(dir.resolve("elsewhere"));
        Path model = Files.createDirectories(dir.resolve("model"));
        SafetensorsWriter.write(elsewhere.resolve("w.safetensors"), Map.of(),
                List.of(SafetensorsWriter.Entry.ofFloats("x", new long[]{1}, new float[]{1}, DType.F32)));
        Files.createSymbolicLink(model.resolve("model-00001-of-00001.safetensors"), elsewhere.resolve("w.safetensors"));
        Files.writeString(model.resolve(TensorStore.INDEX_FILE), "{\"weight_map\":{\"x\":\"model-00001-of-00001.safetensors\"}}");
        m = assertThrows(SafetensorsException.class, () -> TensorStore.open(model)).getMessage();
        assertTrue(m.contains("outside the checkpoint folder") && m.contains("model-00001-of-00001.safetensors"), m);
    }

    @Test
    void bf16AndF16ConversionsRoundToNearestEven() {
        assertEquals((short) 0x3f80, FloatConversion.floatToBf16(1f));
        assertEquals((short) 0x3f80, FloatConversion.floatToBf16(Float.intBitsToFloat(0x3f808000))); // tie -> even
        assertEquals((short) 0x3f82, FloatConversion.floatToBf16(Float.intBitsToFloat(0x3f818000))); // tie -> even (up)
        assertEquals((short) 0x3c00, FloatConversion.floatToF16(1f));
        assertEquals((short) 0x7bff, FloatConversion.floatToF16(65504f));
        assertEquals((short) 0x7c00, FloatConversion.floatToF16(70000f));
        assertEquals((short) 0x0001, FloatConversion.floatToF16(5.9604645e-8f));
        for (int bits = 0; bits < 0x7c00; bits += 7) {
            float f = FloatConversion.f16ToFloat((short) bits);
            assertEquals((short) bits, FloatConversion.floatToF16(f), "f16 bits " + bits);
        }
    }
}
