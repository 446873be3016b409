package dev.hexforge.onnx.export;

import dev.hexforge.checkpoint.Architecture;
import dev.hexforge.checkpoint.Checkpoint;
import dev.hexforge.forward.DecoderForward;
import dev.hexforge.forward.DecoderWeights;
import dev.hexforge.generate.CausalLm;
import dev.hexforge.generate.Generator;
import dev.hexforge.onnx.qnn.QnnPreflight;
import dev.hexforge.onnx.runtime.OnnxLm;
import dev.hexforge.progress.Progress;
import dev.hexforge.safetensors.DType;
import dev.hexforge.synth.Preset;
import dev.hexforge.synth.SyntheticCheckpoint;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Untied and Llama checkpoints (made by synth): the Java forward against both exports on ONNX Runtime. */
class SyntheticParityTest {
    @TempDir
    Path tmp;

    @ParameterizedTest
    @CsvSource({"QWEN2,false,F32", "LLAMA,true,BF16", "LLAMA,false,F16"})
    void javaForwardAndBothExportsAgree(Architecture arch, boolean tied, DType dtype) throws Exception {
        Path model = tmp.resolve("model");
        SyntheticCheckpoint.write(new SyntheticCheckpoint.Options(Preset.TINY, arch, tied, dtype, 7), model, Progress.NONE);
        int[] ids = new SplittableRandom(3).ints(40, 0, 2048).toArray();
        try (Checkpoint ckpt = Checkpoint.open(model)) {
            assertEquals(arch, ckpt.config().architecture());
            assertEquals(!tied, ckpt.tensors().containsKey("lm_head.weight"));
            assertEquals(arch == Architecture.QWEN2, ckpt.config().attentionBias());
            assertExportsAgree(ckpt, ids, ExportOptions.dynamic(), ExportOptions.staticShapes(16, 128));
        }
    }

    /** Each export of the checkpoint computes the Java forward's logits for {@code ids} and its greedy continuation. */
    private void assertExportsAgree(Checkpoint ckpt, int[] ids, ExportOptions... options) throws Exception {
        DecoderForward java = new DecoderForward(DecoderWeights.load(ckpt));
        float[][] expected = java.logits(ids);
        int[] greedy = Generator.generate(java, ids, Generator.Options.greedy(8), null);
        for (ExportOptions opt : options) {
            Path out = tmp.resolve(opt.variant().name() + opt.maxGraphBytes());
            DecoderExporter.export(ckpt, out, opt, Progress.NONE);
            try (CausalLm onnx = OnnxLm.open(out, 1)) {
                float[][] got = onnx.start(ids.length).appendAll(ids);
                for (int t = 0; t < ids.length; t++) {
                    assertArrayEquals(expected[t], got[t], 2e-5f, opt.variant() + " position " + t);
                }
                assertArrayEquals(greedy, Generator.generate(onnx, ids, Generator.Options.greedy(8), null));
            }
        }
    }

    /**
     * Llama 3 (llama3 RoPE scaling in the tables) and Qwen3 (per-head q/k RMSNorm, heads × head_dim ≠ hidden): the
     * Java forward against both exports, the static one split into parts and in Genie's layout too, and the static
     * graphs clean for the HTP.
     */
    @ParameterizedTest
    @CsvSource({"TINY_LLAMA3,F32", "TINY_QWEN3,F32", "TINY_QWEN3,BF16"})
    void newFamiliesAgreeThroughBothExports(Preset preset, DType dtype) throws Exception {
        Path model = tmp.resolve("model");
        SyntheticCheckpoint.write(SyntheticCheckpoint.Options.of(preset, dtype, 11), model, Progress.NONE);
        int[] ids = new SplittableRandom(5).ints(40, 0, 2048).toArray();
        try (Checkpoint ckpt = Checkpoint.open(model)) {
            assertEquals(preset.architecture(), ckpt.config().architecture());
            ExportOptions whole = ExportOptions.staticShapes(16, 128);
            ExportOptions split = new ExportOptions(Variant.STATIC, 16, 128, 17, 2_000_000);
            // Genie's layout: cos / sin from the config on the host (Llama 3's scaling included), keys transposed
            ExportOptions genie = new ExportOptions(Variant.GENIE, 64, 512, 17, 2_000_000);
            assertExportsAgree(ckpt, ids, ExportOptions.dynamic(), whole, split, genie);
            for (ExportOptions opt : new ExportOptions[]{whole, split, genie}) {
                Path out = tmp.resolve(opt.variant().name() + opt.maxGraphBytes());
                ExportInfo info = ExportInfo.read(out);
                assertEquals(opt != whole, info.roles("prompt").size() > 1, "split into parts");
                for (String role : info.graphs().keySet()) {
                    QnnPreflight.Report r = QnnPreflight.check(info.graph(out, role));
                    assertTrue(r.dynamicDimensions().isEmpty() && r.unsupportedTypes().isEmpty(), role + ": " + r.problems());
                }
            }
        }
    }

    @ParameterizedTest
    @CsvSource({"BF16"})
    void synthIsDeterministicForASeed(DType dtype) throws Exception {
        SyntheticCheckpoint.write(SyntheticCheckpoint.Options.of(Preset.TINY, dtype, 1), tmp.resolve("a"), Progress.NONE);
        SyntheticCheckpoint.write(SyntheticCheckpoint.Options.of(Preset.TINY, dtype, 1), tmp.resolve("b"), Progress.NONE);
        SyntheticCheckpoint.write(SyntheticCheckpoint.Options.of(Preset.TINY, dtype, 2), tmp.resolve("c"), Progress.NONE);
        byte[] a = Files.readAllBytes(tmp.resolve("a/model.safetensors"));
        assertArrayEquals(a, Files.readAllBytes(tmp.resolve("b/model.safetensors")));
        assertFalse(java.util.Arrays.equals(a, Files.readAllBytes(tmp.resolve("c/model.safetensors"))));
        assertTrue(Files.size(tmp.resolve("a/tokenizer.json")) > 10_000);
    }
}
