package dev.hexforge.quant;

import dev.hexforge.checkpoint.Checkpoint;
import dev.hexforge.forward.DecoderForward;
import dev.hexforge.forward.DecoderWeights;
import dev.hexforge.generate.CausalLm;
import dev.hexforge.onnx.export.DecoderExporter;
import dev.hexforge.onnx.export.ExportOptions;
import dev.hexforge.onnx.runtime.OnnxLm;
import dev.hexforge.progress.Progress;
import dev.hexforge.quant.awq.Awq;
import dev.hexforge.quant.calib.CalibrationSet;
import dev.hexforge.quant.calib.LayerForward;
import dev.hexforge.quant.calib.LayerSource;
import dev.hexforge.quant.gptq.Gptq;
import dev.hexforge.quant.gptq.GptqRunner;
import dev.hexforge.quant.onnx.QdqFormat;
import dev.hexforge.safetensors.DType;
import dev.hexforge.synth.Preset;
import dev.hexforge.synth.SyntheticCheckpoint;
import dev.hexforge.testing.Fixtures;
import dev.hexforge.tokenizer.Tokenizer;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.nio.file.Path;
import java.util.List;
import java.util.SplittableRandom;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Llama 3 and Qwen3 through the quantizers: the calibration forward (one layer at a time, what GPTQ, AWQ and the
 * sensitivity scan run) is the reference forward, GPTQ and AWQ give the same tensors streamed from the checkpoint as
 * on the float model, and a quantized static QDQ export computes what the fake-quantized Java forward computes.
 */
class ModelFamiliesQuantTest {
    @TempDir
    Path tmp;

    private Path synthetic(Preset p, DType dtype) {
        Path dir = tmp.resolve(p.id() + "-" + dtype);
        SyntheticCheckpoint.write(SyntheticCheckpoint.Options.of(p, dtype, 9), dir, Progress.NONE);
        return dir;
    }

    @ParameterizedTest
    @EnumSource(value = Preset.class, names = {"TINY_LLAMA3", "TINY_QWEN3"})
    void theCalibrationForwardIsTheReferenceForward(Preset preset) {
        try (Checkpoint ckpt = Checkpoint.open(synthetic(preset, DType.F32))) {
            int[] ids = new SplittableRandom(4).ints(33, 0, 2048).toArray();
            float[][][] expected = new DecoderForward(DecoderWeights.load(ckpt)).hiddenStates(ids);
            LayerSource source = LayerSource.of(ckpt);
            LayerForward lf = new LayerForward(ckpt.config());
            int h = ckpt.config().hiddenSize();
            float[] x = source.embed(ids);
            for (int l = 0; l < ckpt.config().numLayers(); l++) {
                x = lf.run(source.layer(l), x, ids.length).output();
                for (int t = 0; t < ids.length; t++) {
                    assertArrayEquals(expected[t][l + 1], java.util.Arrays.copyOfRange(x, t * h, (t + 1) * h), 2e-6f,
                            preset + " layer " + l + " token " + t);
                }
            }
        }
    }

    @ParameterizedTest
    @EnumSource(value = Preset.class, names = {"TINY_LLAMA3", "TINY_QWEN3"})
    void gptqAndAwqStreamedFromTheCheckpointAreGptqAndAwqOnTheFloatModel(Preset preset) {
        Path model = synthetic(preset, DType.BF16);
        CalibrationSet calib;
        try (Tokenizer tok = Tokenizer.load(model)) {
            calib = CalibrationSet.load(Fixtures.root().resolve("calib.jsonl"), tok, 4, 64, 0);
        }
        try (Checkpoint ckpt = Checkpoint.open(model)) {
            GptqRunner.Result heap = GptqRunner.run(LayerSource.of(DecoderWeights.load(ckpt)), calib, QuantSpec.int4Group128(),
                    Gptq.Options.defaults(), List.of(), Progress.NONE);
            GptqRunner.Result streamed = GptqRunner.run(LayerSource.of(ckpt), calib, QuantSpec.int4Group128(),
                    Gptq.Options.defaults(), List.of(), Progress.NONE, StoredTensors.in(tmp.resolve("gptq")));
            for (String name : heap.model().quantized().keySet()) {
                assertArrayEquals(heap.model().quantized().get(name).q(), streamed.model().quantized().get(name).q(), name);
            }
            assertEquals(heap.errors(), streamed.errors());
            assertTrue(heap.errors().stream().allMatch(e -> e.gptq() <= e.rtn() * 1.0001), "GPTQ no worse than RTN per linear");
            Awq.Result awqHeap = Awq.run(LayerSource.of(DecoderWeights.load(ckpt)).firstLayers(2), calib,
                    QuantSpec.int4Group128(), List.of(), Progress.NONE);
            Awq.Result awqStreamed = Awq.run(LayerSource.of(ckpt).firstLayers(2), calib, QuantSpec.int4Group128(), List.of(),
                    Progress.NONE, StoredTensors.in(tmp.resolve("awq")));
            assertEquals(awqHeap.groups(), awqStreamed.groups());
        }
    }

    @ParameterizedTest
    @EnumSource(value = Preset.class, names = {"TINY_LLAMA3", "TINY_QWEN3"})
    void aQuantizedStaticExportComputesTheFakeQuantizedForward(Preset preset) {
        try (Checkpoint ckpt = Checkpoint.open(synthetic(preset, DType.F32))) {
            DecoderWeights base = DecoderWeights.load(ckpt);
            for (QuantSpec spec : List.of(QuantSpec.int8PerChannel(), QuantSpec.int4Group128())) {
                QuantizedModel qm = QuantizedModel.rtn(ckpt, spec, List.of());
                Path out = tmp.resolve(preset.id() + spec.bits());
                DecoderExporter.export(ckpt, out, ExportOptions.staticShapes(16, 128), new QdqFormat(qm), Progress.NONE);
                int[] ids = new SplittableRandom(8).ints(24, 0, 2048).toArray();
                float[][] expected = new DecoderForward(qm.fakeQuantized(base)).logits(ids);
                try (CausalLm lm = OnnxLm.open(out, 1)) {
                    float[][] got = lm.start(ids.length).appendAll(ids);
                    for (int t = 0; t < ids.length; t++) {
                        assertArrayEquals(expected[t], got[t], 5e-5f, preset + " int" + spec.bits() + " position " + t);
                    }
                }
            }
        }
    }

    /**
     * The activation calibration on both families: every activation of the static graphs quantized (the q / k norms and
     * the scaled RoPE included), the logits within 3% (relative L2; 1.3-1.4% measured) of the
     * weight-only graph's on these random-weight models.
     */
    @ParameterizedTest
    @EnumSource(value = Preset.class, names = {"TINY_LLAMA3", "TINY_QWEN3"})
    void aFullyQuantizedStaticExportQuantizesEveryActivationAndStaysCloseToTheWeightOnlyOne(Preset preset) throws Exception {
        Path model = synthetic(preset, DType.BF16);
        List<int[]> calib;
        try (Tokenizer tok = Tokenizer.load(model)) {
            calib = CalibrationSet.load(Fixtures.root().resolve("calib.jsonl"), tok, 32, 256, 0).sequences();
        }
        int[] ids = new SplittableRandom(5).ints(20, 0, 2048).toArray();
        try (Checkpoint ckpt = Checkpoint.open(model)) {
            QuantizedModel qm = QuantizedModel.rtn(ckpt, QuantSpec.int8PerChannel(), List.of()).withEmbeddings(ckpt, QuantSpec.int8PerChannel());
            dev.hexforge.onnx.qdq.ActivationEncodings act = dev.hexforge.quant.calib.ActivationCalibration.run(ckpt, new QdqFormat(qm),
                    calib, 16, dev.hexforge.onnx.qdq.Activations.parse(null, null, true), tmp.resolve("calibration"), Progress.NONE);
            Path weightOnly = tmp.resolve("w8");
            Path full = tmp.resolve("w8a16");
            DecoderExporter.export(ckpt, weightOnly, ExportOptions.staticShapes(32, 64), new QdqFormat(qm), Progress.NONE);
            DecoderExporter.export(ckpt, full, ExportOptions.staticShapes(32, 64), new QdqFormat(qm), act, Progress.NONE);
            for (String graph : List.of("prompt.onnx", "token.onnx")) {
                dev.hexforge.onnx.qnn.QnnPreflight.Report r = dev.hexforge.onnx.qnn.QnnPreflight.check(full.resolve("onnx").resolve(graph),
                        dev.hexforge.onnx.qnn.Precision.W8A16);
                assertTrue(r.clean(), preset + " " + graph + ": " + r.problems());
            }
            float[][] a;
            float[][] b;
            try (CausalLm w = OnnxLm.open(weightOnly, 1); CausalLm f = OnnxLm.open(full, 1)) {
                a = w.start(ids.length).appendAll(ids);
                b = f.start(ids.length).appendAll(ids);
            }
            double err = 0;
            double norm = 0;
            for (int t = 0; t < ids.length; t++) {
                for (int v = 0; v < a[t].length; v++) {
                    double d = a[t][v] - b[t][v];
                    err += d * d;
                    norm += (double) a[t][v] * a[t][v];
                }
            }
            double rel = Math.sqrt(err / norm);
            assertTrue(rel < 0.03, preset + ": the w8a16 logits differ from the weight-only ones by " + rel + " (relative L2)");
        }
    }
}
