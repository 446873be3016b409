package dev.hexforge.lora;

import dev.hexforge.kernels.Kernels;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.hexforge.checkpoint.Checkpoint;
import dev.hexforge.forward.DecoderForward;
import dev.hexforge.forward.DecoderWeights;
import dev.hexforge.safetensors.DType;
import dev.hexforge.safetensors.SafetensorsFile;
import dev.hexforge.safetensors.SafetensorsWriter;
import dev.hexforge.safetensors.TensorInfo;
import dev.hexforge.testing.Fixtures;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class LoraMergeTest {
    @TempDir
    Path tmp;

    static Path adapterDir() {
        return Fixtures.root().resolve("lora-task/reference_adapter");
    }

    @Test
    void mergingTheReferenceAdapterReproducesTheReferenceMergedModel() {
        Path out = tmp.resolve("merged");
        try (Checkpoint base = Checkpoint.open(Fixtures.qwen2Tiny())) {
            LoraAdapter adapter = LoraAdapter.read(adapterDir(), base.config());
            assertEquals(16, adapter.deltas().size());
            assertEquals(2.0f, adapter.config().scale());
            LoraMerge.merge(base, adapter, out);
        }
        try (SafetensorsFile got = SafetensorsFile.open(out.resolve("model.safetensors"));
             SafetensorsFile ref = SafetensorsFile.open(Fixtures.root().resolve("lora-task/merged/model.safetensors"))) {
            assertEquals(ref.tensors().size(), got.tensors().size());
            float max = 0;
            for (TensorInfo t : ref.tensors()) {
                float[] a = ref.floats(t.name());
                float[] b = got.floats(t.name());
                for (int i = 0; i < a.length; i++) {
                    max = Math.max(max, Math.abs(a[i] - b[i]));
                }
            }
            assertTrue(max <= 1e-6f, "max |delta| " + max);
        }
        assertTrue(Files.isRegularFile(out.resolve("tokenizer.json")));
        assertTrue(Files.isRegularFile(out.resolve("config.json")));
    }

    @Test
    void unmergedAdapterForwardEqualsTheMergedModel() {
        try (Checkpoint base = Checkpoint.open(Fixtures.qwen2Tiny());
             Checkpoint merged = Checkpoint.open(Fixtures.root().resolve("lora-task/merged"));
             SafetensorsFile ref = SafetensorsFile.open(Fixtures.root().resolve("lora-task/merged_reference/logits.safetensors"))) {
            LoraAdapter adapter = LoraAdapter.read(adapterDir(), base.config());
            DecoderForward unmerged = new DecoderForward(adapter.applyTo(DecoderWeights.load(base)));
            DecoderForward full = new DecoderForward(DecoderWeights.load(merged));
            for (String key : new String[]{"en", "zh", "chatml"}) {
                long[] l = new long[(int) ref.info(key + ".input_ids").numel()];
                ref.bytes(key + ".input_ids").asLongBuffer().get(l);
                int[] ids = Arrays.stream(l).mapToInt(v -> (int) v).toArray();
                float[][] a = unmerged.logits(ids);
                float[][] b = full.logits(ids);
                float[] expected = ref.floats(key + ".logits");
                float maxAb = 0;
                float maxRef = 0;
                for (int t = 0; t < ids.length; t++) {
                    for (int i = 0; i < a[t].length; i++) {
                        maxAb = Math.max(maxAb, Math.abs(a[t][i] - b[t][i]));
                        maxRef = Math.max(maxRef, Math.abs(b[t][i] - expected[t * a[t].length + i]));
                    }
                }
                assertTrue(maxAb <= 1e-5f, key + ": unmerged vs merged " + maxAb);
                assertTrue(maxRef <= 1e-4f, key + ": merged vs reference " + maxRef);
            }
        }
    }

    /** A copy of the reference adapter with its config edited and tensors replaced. */
    Path adapterVariant(Consumer<ObjectNode> edit, Map<String, long[]> reshape) throws Exception {
        Path dir = Files.createDirectories(tmp.resolve("adapter"));
        ObjectMapper json = new ObjectMapper();
        ObjectNode cfg = (ObjectNode) json.readTree(adapterDir().resolve(LoraConfig.FILE).toFile());
        edit.accept(cfg);
        Files.writeString(dir.resolve(LoraConfig.FILE), cfg.toString());
        List<SafetensorsWriter.Entry> entries = new ArrayList<>();
        try (SafetensorsFile f = SafetensorsFile.open(adapterDir().resolve(LoraAdapter.WEIGHTS))) {
            for (TensorInfo t : f.tensors()) {
                long[] shape = reshape.getOrDefault(t.name(), t.shape());
                long n = Arrays.stream(shape).reduce(1, (x, y) -> x * y);
                entries.add(SafetensorsWriter.Entry.ofFloats(t.name(), shape, Arrays.copyOf(f.floats(t.name()), (int) n), DType.F32));
            }
        }
        SafetensorsWriter.write(dir.resolve(LoraAdapter.WEIGHTS), Map.of("format", "pt"), entries);
        return dir;
    }

    String refused(Path adapter) {
        try (Checkpoint base = Checkpoint.open(Fixtures.qwen2Tiny())) {
            return assertThrows(LoraException.class, () -> LoraAdapter.read(adapter, base.config())).getMessage();
        }
    }

    @Test
    void anRsLoraAdapterOnASubsetOfTargetsReadsScalesAndMergesLikeItsUnmergedForward() throws Exception {
        try (Checkpoint base = Checkpoint.open(Fixtures.qwen2Tiny())) {
            LoraConfig cfg = new LoraConfig(4, 8, 0, List.of("v_proj", "q_proj"), true, "qwen2-tiny");
            var k = dev.hexforge.kernels.Kernels.float64();
            var params = dev.hexforge.lora.train.LoraParams.init(k, base.config(), cfg, 3);
            java.util.SplittableRandom rng = new java.util.SplittableRandom(4);
            for (var m : params.modules()) {
                for (int i = 0; i < m.b.length; i++) {
                    m.b[i] = rng.nextGaussian() * 0.1;
                }
            }
            Path dir = tmp.resolve("rslora");
            params.toAdapter().write(dir);
            LoraAdapter read = LoraAdapter.read(dir, base.config());
            assertEquals(4.0f, read.config().scale(), "rsLoRA: alpha / sqrt(r) = 8 / 2");
            assertEquals(2 * base.config().numLayers(), read.deltas().size());
            assertTrue(read.deltas().keySet().stream().allMatch(n -> n.contains("q_proj") || n.contains("v_proj")));
            Path merged = tmp.resolve("rslora-merged");
            LoraMerge.merge(base, read, merged);
            int[] ids = {1, 50, 300, 7, 1999, 12};
            float[][] a = new DecoderForward(read.applyTo(DecoderWeights.load(base))).logits(ids);
            float[][] b;
            try (Checkpoint m = Checkpoint.open(merged)) {
                b = new DecoderForward(DecoderWeights.load(m)).logits(ids);
            }
            float max = 0;
            float moved = 0;
            float[][] plain = new DecoderForward(DecoderWeights.load(base)).logits(ids);
            for (int t = 0; t < ids.length; t++) {
                for (int i = 0; i < a[t].length; i++) {
                    max = Math.max(max, Math.abs(a[t][i] - b[t][i]));
                    moved = Math.max(moved, Math.abs(a[t][i] - plain[t][i]));
                }
            }
            assertTrue(max <= 1e-5f, "unmerged vs merged " + max);
            assertTrue(moved > 1e-2f, "the adapter changes the logits (" + moved + "), so the comparison means something");
        }
    }

    @Test
    void anAdapterWhoseShapesDoNotFitIsRefused() throws Exception {
        String name = LoraAdapter.tensorName(1, dev.hexforge.checkpoint.TensorNames.Linear.K, 'B');
        String m = refused(adapterVariant(c -> { }, Map.of(name, new long[]{128, 8})));
        assertTrue(m.contains(name) && m.contains("[128, 8]") && m.contains("[64, 8]"), m);
    }

    @Test
    void aTargetModuleThatDoesNotExistIsRefused() throws Exception {
        String m = refused(adapterVariant(c -> c.putArray("target_modules").add("q_proj").add("c_attn"), Map.of()));
        assertTrue(m.contains("'c_attn'"), m);
    }

    @Test
    void unsupportedVariantsAreNamed() throws Exception {
        String m = refused(adapterVariant(c -> c.put("use_dora", true), Map.of()));
        assertTrue(m.contains("use_dora"), m);
    }

    @Test
    void aMergeIntoAnExistingFolderIsRefusedAndLeavesNothing() throws Exception {
        Path out = Files.createDirectories(tmp.resolve("exists"));
        try (Checkpoint base = Checkpoint.open(Fixtures.qwen2Tiny())) {
            LoraAdapter adapter = LoraAdapter.read(adapterDir(), base.config());
            assertThrows(LoraException.class, () -> LoraMerge.merge(base, adapter, out));
        }
        assertFalse(Files.exists(tmp.resolve("exists.partial")));
    }
}
