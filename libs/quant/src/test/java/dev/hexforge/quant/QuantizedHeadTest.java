package dev.hexforge.quant;

import dev.hexforge.checkpoint.Architecture;
import dev.hexforge.checkpoint.Checkpoint;
import dev.hexforge.checkpoint.TensorNames;
import dev.hexforge.eval.Perplexity;
import dev.hexforge.forward.DecoderForward;
import dev.hexforge.forward.DecoderWeights;
import dev.hexforge.generate.CausalLm;
import dev.hexforge.generate.Generator;
import dev.hexforge.onnx.export.DecoderExporter;
import dev.hexforge.onnx.export.ExportInfo;
import dev.hexforge.onnx.export.ExportOptions;
import dev.hexforge.onnx.export.LinearFormat;
import dev.hexforge.onnx.proto.Onnx.GraphProto;
import dev.hexforge.onnx.proto.Onnx.ModelProto;
import dev.hexforge.onnx.proto.Onnx.NodeProto;
import dev.hexforge.onnx.proto.Onnx.TensorProto;
import dev.hexforge.onnx.qnn.QnnPreflight;
import dev.hexforge.onnx.runtime.OnnxLm;
import dev.hexforge.progress.Progress;
import dev.hexforge.quant.onnx.MatMulNBitsFormat;
import dev.hexforge.quant.onnx.QdqFormat;
import dev.hexforge.safetensors.DType;
import dev.hexforge.safetensors.SafetensorsFile;
import dev.hexforge.synth.Preset;
import dev.hexforge.synth.SyntheticCheckpoint;
import dev.hexforge.testing.Fixtures;
import dev.hexforge.tokenizer.Tokenizer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The quantized token embedding and LM head: the RTN rule, one tensor for a tied model's lookup and head, two for an
 * untied one, the exports computing what the fake-quantized Java forward computes, and the accuracy cost.
 */
class QuantizedHeadTest {
    @TempDir
    static Path tmp;

    /** The rule, written out independently: per row, scale = max|w| / 127 (1 for a zero row), round half to even. */
    static void assertInt8PerChannelRule(float[] w, int rows, int cols, QuantizedLinear q) {
        assertEquals(QuantSpec.int8PerChannel(), q.spec());
        for (int r = 0; r < rows; r++) {
            float amax = 0;
            for (int c = 0; c < cols; c++) {
                amax = Math.max(amax, Math.abs(w[r * cols + c]));
            }
            float scale = amax == 0 ? 1f : amax / 127f;
            assertEquals(scale, q.scale(r, 0), 0f, "scale of row " + r);
            for (int c = 0; c < cols; c++) {
                int expected = (int) Math.max(-127, Math.min(127, Math.rint(w[r * cols + c] / scale)));
                if (expected != q.value(r, c)) {
                    throw new AssertionError("row " + r + " column " + c + ": " + q.value(r, c) + ", the rule gives " + expected);
                }
            }
        }
    }

    @Test
    void aTiedModelsEmbeddingIsOneInt8PerChannelTensorUnderTheRule() {
        try (Checkpoint ckpt = Checkpoint.open(Fixtures.qwen2Tiny())) {
            DecoderWeights base = DecoderWeights.load(ckpt);
            QuantizedModel qm = QuantizedModel.rtn(ckpt, QuantSpec.int4Group128(), List.of())
                    .withEmbeddings(base, QuantSpec.int8PerChannel());
            assertEquals(Set.of(TensorNames.EMBED), qm.embeddings().keySet());
            assertInt8PerChannelRule(base.embed(), ckpt.config().vocabSize(), ckpt.config().hiddenSize(),
                    qm.embeddings().get(TensorNames.EMBED));
            DecoderWeights fake = qm.fakeQuantized(base);
            assertTrue(fake.embed() == fake.lmHead(), "the lookup and the head read one array");
            assertArrayEquals(qm.embeddings().get(TensorNames.EMBED).dequantize(), fake.lmHead());
        }
    }

    static ModelProto graph(Path export, String file) throws IOException {
        try (InputStream in = Files.newInputStream(export.resolve("onnx").resolve(file))) {
            return ModelProto.parseFrom(in);
        }
    }

    /** The initializers read by the nodes of a scope. */
    static Set<String> initializersOf(GraphProto g, String scope) {
        Set<String> inits = g.getInitializerList().stream().map(TensorProto::getName).collect(Collectors.toSet());
        Set<String> used = new HashSet<>();
        for (NodeProto n : g.getNodeList()) {
            if (n.getName().startsWith(scope + "/")) {
                n.getInputList().stream().filter(inits::contains).forEach(used::add);
            }
        }
        return used;
    }

    @ParameterizedTest
    @CsvSource({"matmulnbits,model.embed_tokens.weight_nbits", "qdq,model.embed_tokens.weight_quantized"})
    void aTiedModelsLookupAndHeadReadTheSameQuantizedTensor(String format, String tensor) throws IOException {
        try (Checkpoint ckpt = Checkpoint.open(Fixtures.qwen2Tiny())) {
            DecoderWeights base = DecoderWeights.load(ckpt);
            QuantizedModel qm = QuantizedModel.rtn(ckpt, QuantSpec.int4Group128(), List.of())
                    .withEmbeddings(base, QuantSpec.int8PerChannel());
            Path out = tmp.resolve("tied-" + format);
            DecoderExporter.export(ckpt, out, ExportOptions.dynamic(), format(format, qm), Progress.NONE);
            GraphProto g = graph(out, "model.onnx").getGraph();
            assertTrue(initializersOf(g, "/model/embed_tokens").contains(tensor), "the lookup reads " + tensor);
            assertTrue(initializersOf(g, "/lm_head").contains(tensor), "the head reads " + tensor);
            assertFalse(g.getInitializerList().stream().anyMatch(t -> t.getName().equals(TensorNames.EMBED)),
                    "no float embedding is stored");
            assertEquals(0, ExportInfo.read(out).lookupBytes(), "a tied embedding is read whole, as the head");
            TensorProto q = g.getInitializerList().stream().filter(t -> t.getName().equals(tensor)).findFirst().orElseThrow();
            assertEquals(format.equals("qdq") ? TensorProto.DataType.INT8_VALUE : TensorProto.DataType.UINT8_VALUE, q.getDataType());
        }
    }

    static LinearFormat format(String format, QuantizedModel qm) {
        return format.equals("qdq") ? new QdqFormat(qm) : new MatMulNBitsFormat(qm, MatMulNBitsFormat.EXACT);
    }

    static void assertExportComputesTheFakeQuantizedForward(Checkpoint ckpt, QuantizedModel qm, String format, String variant,
                                                           int[] evalIds, List<int[]> prompts) {
        ExportOptions opt = variant.equals("static") ? ExportOptions.staticShapes(128, 512) : ExportOptions.dynamic();
        Path out = tmp.resolve(ckpt.dir().getFileName() + "-" + qm.headSpec().bits() + format + variant);
        DecoderExporter.export(ckpt, out, opt, format(format, qm), Progress.NONE);
        DecoderForward reference = new DecoderForward(qm.fakeQuantized(DecoderWeights.load(ckpt)));
        try (CausalLm lm = OnnxLm.open(out, 2)) {
            double expected = Perplexity.evaluate(reference, evalIds, 128, null).perplexity();
            double got = Perplexity.evaluate(lm, evalIds, 128, null).perplexity();
            assertEquals(expected, got, expected * 1e-4, out.getFileName() + ": perplexity");
            for (int[] ids : prompts) {
                assertArrayEquals(Generator.generate(reference, ids, Generator.Options.greedy(12), null),
                        Generator.generate(lm, ids, Generator.Options.greedy(12), null), out.getFileName() + " greedy");
            }
        }
        if (variant.equals("static")) {
            QnnPreflight.Report r = QnnPreflight.check(out.resolve("onnx/prompt.onnx"));
            assertTrue(r.clean(), r.problems().toString());
        }
    }

    @ParameterizedTest
    @CsvSource({"8,matmulnbits,dynamic", "4,matmulnbits,dynamic", "8,qdq,dynamic", "8,qdq,static", "4,qdq,static"})
    void exportsWithAQuantizedHeadComputeTheFakeQuantizedForward(int headBits, String format, String variant) {
        try (Checkpoint ckpt = Checkpoint.open(Fixtures.qwen2Tiny())) {
            QuantSpec head = headBits == 8 ? QuantSpec.int8PerChannel() : QuantSpec.int4Group128();
            QuantizedModel qm = QuantizedModel.rtn(ckpt, QuantSpec.int4Group128(), List.of())
                    .withEmbeddings(DecoderWeights.load(ckpt), head);
            List<int[]> prompts = new java.util.ArrayList<>();
            for (var p : Fixtures.json(Fixtures.reference("reference.json")).path("prompts")) {
                prompts.add(Fixtures.ints(p.path("input_ids")));
            }
            assertExportComputesTheFakeQuantizedForward(ckpt, qm, format, variant, Arrays.copyOf(Fixtures.evalTxtIds(), 2048), prompts);
        }
    }

    @Test
    void anUntiedModelGetsTwoTensorsEachUnderTheRuleAndItsExportsComputeTheFakeQuantizedForward() throws IOException {
        Path model = tmp.resolve("untied");
        SyntheticCheckpoint.write(new SyntheticCheckpoint.Options(Preset.TINY, Architecture.LLAMA, false, DType.BF16, 3),
                model, Progress.NONE);
        try (Checkpoint ckpt = Checkpoint.open(model)) {
            DecoderWeights base = DecoderWeights.load(ckpt);
            QuantizedModel qm = QuantizedModel.rtn(ckpt, QuantSpec.int8PerChannel(), List.of())
                    .withEmbeddings(base, QuantSpec.int8PerChannel());
            assertEquals(Set.of(TensorNames.EMBED, TensorNames.LM_HEAD), qm.embeddings().keySet());
            int v = ckpt.config().vocabSize();
            int h = ckpt.config().hiddenSize();
            assertInt8PerChannelRule(base.embed(), v, h, qm.embeddings().get(TensorNames.EMBED));
            assertInt8PerChannelRule(base.lmHead(), v, h, qm.embeddings().get(TensorNames.LM_HEAD));
            int[] ids = new int[600];
            for (int i = 0; i < ids.length; i++) {
                ids[i] = (i * 7919) % v;
            }
            List<int[]> prompts = List.of(new int[]{1, 2, 3, 4}, new int[]{100, 7, 2000});
            assertExportComputesTheFakeQuantizedForward(ckpt, qm, "matmulnbits", "dynamic", ids, prompts);
            assertExportComputesTheFakeQuantizedForward(ckpt, qm, "qdq", "static", ids, prompts);
            GraphProto g = graph(tmp.resolve("untied-8matmulnbitsdynamic"), "model.onnx").getGraph();
            assertEquals(Set.of("model.embed_tokens.weight_nbits", "model.embed_tokens.weight_nbits_scales"),
                    initializersOf(g, "/model/embed_tokens").stream().filter(n -> !n.startsWith("const_")).collect(Collectors.toSet()));
            assertTrue(initializersOf(g, "/lm_head").contains("lm_head.weight_nbits"));
            Path export = tmp.resolve("untied-8matmulnbitsdynamic");
            ExportInfo info = ExportInfo.read(export);
            long file = Files.size(export.resolve(info.weightsFile()));
            assertEquals((long) v * h + v * 4L, info.lookupBytes(), "the untied embedding: int8 values and a scale per row");
            assertEquals(file - info.lookupBytes(), info.weightBytes(export), "a decode step reads one row of the embedding");
        }
    }

    @Test
    void theQuantizePassQuantizesTheHeadByDefaultWithinHalfAPercentOfFloatAtInt4AndStoresItInTheCheckpoint() throws IOException {
        Path out = tmp.resolve("pass-int4");
        try (Checkpoint ckpt = Checkpoint.open(Fixtures.qwen2Tiny())) {
            QuantizeOptions opt = new QuantizeOptions("rtn", QuantSpec.int4Group128(), List.of(), QuantSpec.int8PerChannel(),
                    null, null, Fixtures.root().resolve("corpus/eval.txt"), 128, Integer.MAX_VALUE, 0.5, 0, null, null);
            QuantizationReport r = QuantizePipeline.run(ckpt, opt, out, Progress.NONE).report();
            assertEquals("int8 sym per-channel", r.head());
            double reference = Fixtures.json(Fixtures.reference("perplexity.json")).path("results").path("float32")
                    .path("eval.txt").path("perplexity").asDouble();
            assertEquals(reference, r.floatPerplexity(), reference * 1e-5);
            double rise = r.quantizedPerplexity() / r.floatPerplexity() - 1;
            assertTrue(rise > 0 && rise <= 0.005, "int4 linears + int8 head: perplexity rose by " + rise * 100 + "%");
            QuantizeOptions floatHead = new QuantizeOptions("rtn", QuantSpec.int4Group128(), List.of(), null,
                    null, null, Fixtures.root().resolve("corpus/eval.txt"), 128, Integer.MAX_VALUE, 0.5, 0, null, null);
            QuantizationReport f = QuantizePipeline.run(ckpt, floatHead, tmp.resolve("pass-int4-float-head"), Progress.NONE).report();
            assertTrue(r.quantizedPerplexity() - f.quantizedPerplexity() <= reference * 1e-3,
                    "the int8 head's own cost: " + f.quantizedPerplexity() + " -> " + r.quantizedPerplexity());
            assertTrue(r.greedyAgreement() >= f.greedyAgreement() - 0.05,
                    "greedy agreement " + r.greedyAgreement() + " with the int8 head, " + f.greedyAgreement() + " without");
            assertTrue(r.layers().stream().anyMatch(l -> l.name().equals(TensorNames.EMBED) && l.bits() == 8));
        }
        Path written = out.resolve(QuantizePipeline.CHECKPOINT);
        try (SafetensorsFile p = SafetensorsFile.open(written.resolve(QuantizedCheckpoint.PARAMS))) {
            assertEquals(DType.I8, p.info("model.embed_tokens.q").dtype());
        }
        try (Checkpoint q = Checkpoint.open(written); Checkpoint f = Checkpoint.open(Fixtures.qwen2Tiny())) {
            QuantizedModel read = QuantizedCheckpoint.read(q);
            assertEquals(QuantSpec.int8PerChannel(), read.headSpec());
            QuantizedLinear e = read.embeddings().get(TensorNames.EMBED);
            assertNotNull(e);
            assertInt8PerChannelRule(f.floats(TensorNames.EMBED), f.config().vocabSize(), f.config().hiddenSize(), e);
            assertArrayEquals(e.dequantize(), q.floats(TensorNames.EMBED), "model.safetensors holds the dequantized embedding");
        }
    }

    @Test
    void keepLeavesTheEmbeddingFloat() {
        Path out = tmp.resolve("pass-keep");
        try (Checkpoint ckpt = Checkpoint.open(Fixtures.qwen2Tiny())) {
            QuantizeOptions opt = new QuantizeOptions("rtn", QuantSpec.int8PerChannel(), List.of(), null,
                    null, null, null, 128, 1024, 0.5, 0, null, null);
            QuantizationReport r = QuantizePipeline.run(ckpt, opt, out, Progress.NONE).report();
            assertEquals("float", r.head());
        }
        try (Checkpoint q = Checkpoint.open(out.resolve(QuantizePipeline.CHECKPOINT));
             Checkpoint f = Checkpoint.open(Fixtures.qwen2Tiny())) {
            assertTrue(QuantizedCheckpoint.read(q).embeddings().isEmpty());
            assertArrayEquals(f.floats(TensorNames.EMBED), q.floats(TensorNames.EMBED));
        }
    }
}
