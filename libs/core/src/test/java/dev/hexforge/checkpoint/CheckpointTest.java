package dev.hexforge.checkpoint;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.hexforge.safetensors.DType;
import dev.hexforge.safetensors.SafetensorsFile;
import dev.hexforge.safetensors.SafetensorsWriter;
import dev.hexforge.testing.Fixtures;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class CheckpointTest {
    static final ObjectMapper JSON = new ObjectMapper();
    @TempDir
    Path dir;

    @Test
    void readsTheTinyQwen2Config() {
        try (Checkpoint c = Checkpoint.open(Fixtures.qwen2Tiny())) {
            ModelConfig m = c.config();
            assertEquals(Architecture.QWEN2, m.architecture());
            assertEquals(128, m.hiddenSize());
            assertEquals(32, m.headDim());
            assertEquals(2, m.groupSize());
            assertTrue(m.tieWordEmbeddings());
            assertTrue(m.attentionBias());
            assertEquals(List.of(2045), m.eosTokenIds());
            assertEquals(50, c.tensors().size());
            assertTrue(c.warnings().isEmpty(), c.warnings().toString());
        }
    }

    /** A copy of the tiny model with its config edited and/or tensors rewritten. */
    Path variant(Consumer<ObjectNode> editConfig, Map<String, float[]> replace, List<String> drop) throws IOException {
        ObjectNode cfg = (ObjectNode) JSON.readTree(Fixtures.qwen2Tiny().resolve("config.json").toFile());
        editConfig.accept(cfg);
        Files.writeString(dir.resolve("config.json"), cfg.toPrettyString());
        List<SafetensorsWriter.Entry> entries = new ArrayList<>();
        try (SafetensorsFile f = SafetensorsFile.open(Fixtures.qwen2Tiny().resolve("model.safetensors"))) {
            for (var t : f.tensors()) {
                if (drop.contains(t.name())) {
                    continue;
                }
                float[] v = replace.getOrDefault(t.name(), f.floats(t.name()));
                long[] shape = replace.containsKey(t.name()) && v.length != t.numel() ? new long[]{v.length} : t.shape();
                entries.add(SafetensorsWriter.Entry.ofFloats(t.name(), shape, v, DType.F32));
            }
        }
        SafetensorsWriter.write(dir.resolve("model.safetensors"), Map.of("format", "pt"), entries);
        return dir;
    }

    String refused(Path p) {
        return assertThrows(CheckpointException.class, () -> Checkpoint.open(p).close()).getMessage();
    }

    @Test
    void unknownArchitectureIsNamed() throws IOException {
        String m = refused(variant(c -> c.put("model_type", "mamba"), Map.of(), List.of()));
        assertTrue(m.contains("'mamba'") && m.contains("qwen2, llama"), m);
    }

    @Test
    void unsupportedRopeScalingIsNamed() throws IOException {
        String m = refused(variant(c -> c.putObject("rope_scaling").put("type", "yarn").put("factor", 4.0), Map.of(), List.of()));
        assertTrue(m.contains("rope_scaling") && m.contains("yarn"), m);
    }

    @Test
    void missingTensorIsNamed() throws IOException {
        String m = refused(variant(c -> { }, Map.of(), List.of("model.layers.2.mlp.up_proj.weight")));
        assertTrue(m.contains("missing tensor 'model.layers.2.mlp.up_proj.weight'"), m);
    }

    @Test
    void configAndWeightsDisagree() throws IOException {
        String m = refused(variant(c -> c.put("intermediate_size", 256), Map.of(), List.of()));
        assertTrue(m.contains("model.layers.0.mlp.gate_proj.weight") && m.contains("[384, 128]") && m.contains("[256, 128]"), m);
        m = refused(variant(c -> c.put("num_key_value_heads", 3), Map.of(), List.of()));
        assertTrue(m.contains("not a multiple of num_key_value_heads"), m);
    }

    @Test
    void untiedConfigWithoutLmHeadIsRefused() throws IOException {
        String m = refused(variant(c -> c.put("tie_word_embeddings", false), Map.of(), List.of()));
        assertTrue(m.contains("missing tensor 'lm_head.weight'"), m);
    }

    @Test
    void nonFiniteWeightsAreRefusedByNameUnlessAllowed() throws IOException {
        float[] norm = new float[128];
        java.util.Arrays.fill(norm, 1f);
        norm[3] = Float.NaN;
        norm[4] = Float.POSITIVE_INFINITY;
        Path m = variant(x -> { }, Map.of("model.norm.weight", norm), List.of());
        String refusal = refused(m);
        assertTrue(refusal.contains("NaN or Inf weights in 1 tensor(s): 'model.norm.weight' (2 of 128)")
                && refusal.contains("--allow-non-finite"), refusal);
        try (Checkpoint c = Checkpoint.open(m, NonFinite.ALLOW)) {
            assertEquals(1, c.warnings().size());
            assertTrue(c.warnings().get(0).contains("going on, as allowNonFinite asks")
                    && c.warnings().get(0).contains("'model.norm.weight' (2 of 128)"), c.warnings().toString());
        }
    }

    @Test
    void missingConfigIsExplained() {
        String m = refused(dir);
        assertTrue(m.contains("no config.json"), m);
    }

    @Test
    void nonFiniteValuesAreCountedInEveryFloatTypeAndTail() {
        java.util.Random r = new java.util.Random(7);
        long[] scratch = new long[Checkpoint.SCAN_CHUNK]; // shared, as open() shares it: what one tensor left must not count
        for (DType t : List.of(DType.F32, DType.BF16, DType.F16)) {
            int exp = t == DType.F32 ? 0x7f800000 : t == DType.BF16 ? 0x7f80 : 0x7c00;
            for (int n : new int[]{0, 1, 3, 4, 5, 17, 1000, 70_001, 9}) { // 70001 spans more than one scratch's worth
                java.nio.ByteBuffer b = java.nio.ByteBuffer.allocate(n * t.bytes() + 2).order(java.nio.ByteOrder.LITTLE_ENDIAN);
                b.putShort((short) 0x7fff);
                long expected = 0;
                for (int i = 0; i < n; i++) {
                    // a third all-exponent values (NaN or Inf, either sign), the rest one exponent bit short of them
                    int v = r.nextInt();
                    v = r.nextInt(3) == 0 ? v | exp : (v | exp) & ~(1 << Integer.numberOfTrailingZeros(exp) + r.nextInt(Integer.bitCount(exp)));
                    if ((v & exp) == exp) {
                        expected++;
                    }
                    if (t == DType.F32) {
                        b.putInt(v);
                    } else {
                        b.putShort((short) v);
                    }
                }
                b.position(2);
                assertEquals(expected, Checkpoint.countNonFinite(b.slice().order(java.nio.ByteOrder.LITTLE_ENDIAN), t, scratch), t + " x " + n);
            }
        }
    }
}
