package dev.hexforge.quant;

import dev.hexforge.checkpoint.Architecture;
import dev.hexforge.checkpoint.Checkpoint;
import dev.hexforge.forward.DecoderWeights;
import dev.hexforge.progress.Progress;
import dev.hexforge.quant.awq.Awq;
import dev.hexforge.quant.calib.CalibrationSet;
import dev.hexforge.quant.calib.LayerSource;
import dev.hexforge.quant.gptq.Gptq;
import dev.hexforge.quant.gptq.GptqRunner;
import dev.hexforge.safetensors.DType;
import dev.hexforge.safetensors.SafetensorsFile;
import dev.hexforge.safetensors.SafetensorsWriter;
import dev.hexforge.synth.Preset;
import dev.hexforge.synth.SyntheticCheckpoint;
import dev.hexforge.testing.Fixtures;
import dev.hexforge.tokenizer.Tokenizer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Quantizing by layer from the mapped checkpoint, with each finished tensor kept in a file (what the quantize pass
 * does), gives bit for bit what the same methods give with the whole float model and every tensor on the heap.
 */
class StreamedQuantizeTest {
    @TempDir
    Path tmp;

    private static CalibrationSet calibration(Path model, int samples, int length) {
        try (Tokenizer tok = Tokenizer.load(model)) {
            return CalibrationSet.load(Fixtures.root().resolve("calib.jsonl"), tok, samples, length, 0);
        }
    }

    private Path synthetic() {
        Path model = tmp.resolve("synth");
        SyntheticCheckpoint.write(new SyntheticCheckpoint.Options(Preset.TINY, Architecture.QWEN2, true, DType.BF16, 7),
                model, Progress.NONE);
        return model;
    }

    private static void assertSameTensors(QuantizedModel expected, QuantizedModel actual) {
        assertEquals(List.copyOf(expected.quantized().keySet()), List.copyOf(actual.quantized().keySet()));
        for (String name : expected.quantized().keySet()) {
            QuantizedLinear e = expected.quantized().get(name);
            QuantizedLinear a = actual.quantized().get(name);
            assertEquals(e.spec(), a.spec(), name);
            assertArrayEquals(e.q(), a.q(), name);
            assertArrayEquals(e.scales(), a.scales(), name);
            assertArrayEquals(e.zeros(), a.zeros(), name);
        }
        assertEquals(expected.replacedFloats().keySet(), actual.replacedFloats().keySet());
        expected.replacedFloats().forEach((name, f) -> assertArrayEquals(f, actual.replacedFloats().get(name), name));
    }

    @Test
    void rtnKeptInFilesWritesTheSameCheckpointAsRtnOnTheHeap() throws Exception {
        for (Path model : List.of(Fixtures.qwen2Tiny(), synthetic())) {
            try (Checkpoint ckpt = Checkpoint.open(model)) {
                QuantizedModel heap = QuantizedModel.rtn(ckpt, QuantSpec.int4Group128(), List.of("k_proj"))
                        .withEmbeddings(ckpt, QuantSpec.int8PerChannel());
                Path store = tmp.resolve(model.getFileName() + "-store");
                QuantizedModel stored = QuantizedModel.rtn(ckpt, QuantSpec.int4Group128(), List.of("k_proj"),
                                StoredTensors.in(store.resolve("linears")))
                        .withEmbeddings(ckpt, QuantSpec.int8PerChannel(), StoredTensors.in(store.resolve("embeddings")));
                assertTrue(stored.linears() instanceof StoredTensors, "the model keeps the stored tensors, not a copy");
                assertSameTensors(heap, stored);

                Path a = tmp.resolve(model.getFileName() + "-heap");
                Path b = tmp.resolve(model.getFileName() + "-stored");
                QuantizedCheckpoint.write(ckpt, heap, "rtn", a);
                QuantizedCheckpoint.write(ckpt, stored, "rtn", b);
                for (String f : List.of("model.safetensors", QuantizedCheckpoint.PARAMS, QuantizedCheckpoint.INFO)) {
                    assertEquals(-1, Files.mismatch(a.resolve(f), b.resolve(f)), f);
                }
                try (Checkpoint back = Checkpoint.open(b)) {
                    QuantizedModel read = QuantizedCheckpoint.read(back);
                    assertTrue(read.linears() instanceof StoredTensors, "a quantized checkpoint is read when used");
                    assertSameTensors(heap, read);
                }
            }
        }
    }

    @Test
    void aCheckpointInShardsQuantizesToTheSameTensorsAsInOneFile() {
        SyntheticCheckpoint.Options o = new SyntheticCheckpoint.Options(Preset.TINY, Architecture.LLAMA, false, DType.BF16, 5);
        Path single = tmp.resolve("one-file");
        Path sharded = tmp.resolve("shards");
        SyntheticCheckpoint.write(o, single, Progress.NONE);
        SyntheticCheckpoint.write(o, sharded, 200_000, Progress.NONE);
        try (Checkpoint a = Checkpoint.open(single); Checkpoint b = Checkpoint.open(sharded)) {
            assertTrue(b.store().files().size() > 2, "written in shards");
            CalibrationSet calib = calibration(single, 8, 64);
            assertSameTensors(GptqRunner.run(LayerSource.of(a), calib, QuantSpec.int4Group128(), Gptq.Options.defaults(), List.of(),
                            Progress.NONE).model().withEmbeddings(a, QuantSpec.int8PerChannel()),
                    GptqRunner.run(LayerSource.of(b), calib, QuantSpec.int4Group128(), Gptq.Options.defaults(), List.of(),
                            Progress.NONE).model().withEmbeddings(b, QuantSpec.int8PerChannel()));
        }
    }

    @Test
    void gptqByLayerFromTheCheckpointIsGptqOnTheFloatModel() {
        for (Path model : List.of(Fixtures.qwen2Tiny(), synthetic())) {
            CalibrationSet calib = calibration(model, 8, 64);
            try (Checkpoint ckpt = Checkpoint.open(model)) {
                GptqRunner.Result heap = GptqRunner.run(LayerSource.of(DecoderWeights.load(ckpt)), calib,
                        QuantSpec.int4Group128(), Gptq.Options.defaults(), List.of("o_proj"), Progress.NONE);
                GptqRunner.Result streamed = GptqRunner.run(LayerSource.of(ckpt), calib, QuantSpec.int4Group128(),
                        Gptq.Options.defaults(), List.of("o_proj"), Progress.NONE, StoredTensors.in(tmp.resolve(model.getFileName() + "-gptq")));
                assertSameTensors(heap.model(), streamed.model());
                assertEquals(heap.errors(), streamed.errors());
            }
        }
    }

    @Test
    void awqByLayerFromTheCheckpointIsAwqOnTheFloatModel() {
        for (Path model : List.of(Fixtures.qwen2Tiny(), synthetic())) {
            CalibrationSet calib = calibration(model, 4, 64);
            try (Checkpoint ckpt = Checkpoint.open(model)) {
                Awq.Result heap = Awq.run(LayerSource.of(DecoderWeights.load(ckpt)).firstLayers(2), calib,
                        QuantSpec.int4Group128(), List.of(), Progress.NONE);
                Awq.Result streamed = Awq.run(LayerSource.of(ckpt).firstLayers(2), calib, QuantSpec.int4Group128(), List.of(),
                        Progress.NONE, StoredTensors.in(tmp.resolve(model.getFileName() + "-awq")));
                assertSameTensors(heap.model(), streamed.model());
                assertEquals(heap.groups(), streamed.groups());
            }
        }
    }

    @Test
    void aStoredTensorIsReadBackAsItWasPutAndInOrder() {
        StoredTensors s = StoredTensors.in(tmp.resolve("s"));
        QuantizedLinear sym = new QuantizedLinear(2, 3, new QuantSpec(8, 0, true), new byte[]{-1, 2, -3, 4, -128, 127},
                new float[]{0.5f, 2f}, null);
        QuantizedLinear asym = new QuantizedLinear(1, 16, new QuantSpec(4, 8, false), new byte[16], new float[]{1f, 3f}, new byte[]{7, 9});
        s.put("model.layers.1.mlp.up_proj.weight", sym);
        s.put("model.layers.0.mlp.up_proj.weight", asym);
        assertEquals(List.of("model.layers.1.mlp.up_proj.weight", "model.layers.0.mlp.up_proj.weight"), new ArrayList<>(s.keySet()));
        QuantizedLinear a = s.get("model.layers.1.mlp.up_proj.weight");
        assertArrayEquals(sym.q(), a.q());
        assertArrayEquals(sym.scales(), a.scales());
        assertEquals(null, a.zeros());
        assertArrayEquals(asym.zeros(), s.get("model.layers.0.mlp.up_proj.weight").zeros());
        assertEquals(null, s.get("model.layers.2.mlp.up_proj.weight"));
        assertThrows(IllegalArgumentException.class, () -> s.put("model.layers.0.mlp.up_proj.weight", asym));
    }

    @Test
    void aQuantizedCheckpointWhoseScalesDoNotFitItsSpecIsRefusedWhenOpened() throws Exception {
        Path q = tmp.resolve("q");
        try (Checkpoint ckpt = Checkpoint.open(Fixtures.qwen2Tiny())) {
            QuantizedCheckpoint.write(ckpt, QuantizedModel.rtn(ckpt, QuantSpec.int4Group128(), List.of()), "rtn", q);
        }
        // rewrite one tensor's scales with one group too few
        Path params = q.resolve(QuantizedCheckpoint.PARAMS);
        List<SafetensorsWriter.Entry> entries = new ArrayList<>();
        try (SafetensorsFile f = SafetensorsFile.open(params)) {
            for (var t : f.tensors()) {
                byte[] bytes = new byte[(int) t.byteSize()];
                f.bytes(t.name()).get(bytes);
                long[] shape = t.shape();
                if (t.name().equals("model.layers.0.mlp.down_proj.scale")) {
                    shape = new long[]{shape[0], shape[1] - 1};
                    bytes = java.util.Arrays.copyOf(bytes, (int) (shape[0] * shape[1] * 4));
                }
                entries.add(SafetensorsWriter.Entry.ofBytes(t.name(), t.dtype(), shape, java.nio.ByteBuffer.wrap(bytes)));
            }
        }
        Files.delete(params);
        SafetensorsWriter.write(params, Map.of(), entries);
        try (Checkpoint ckpt = Checkpoint.open(q)) {
            QuantizationException e = assertThrows(QuantizationException.class, () -> QuantizedCheckpoint.read(ckpt));
            assertTrue(e.getMessage().contains("model.layers.0.mlp.down_proj.scale"), e.getMessage());
        }
    }
}
