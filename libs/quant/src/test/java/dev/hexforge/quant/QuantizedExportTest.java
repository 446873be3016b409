package dev.hexforge.quant;

import com.fasterxml.jackson.databind.JsonNode;
import dev.hexforge.checkpoint.Checkpoint;
import dev.hexforge.eval.Perplexity;
import dev.hexforge.forward.DecoderForward;
import dev.hexforge.forward.DecoderWeights;
import dev.hexforge.quant.calib.LayerSource;
import dev.hexforge.generate.CausalLm;
import dev.hexforge.generate.Generator;
import dev.hexforge.onnx.export.DecoderExporter;
import dev.hexforge.onnx.export.ExportOptions;
import dev.hexforge.onnx.export.LinearFormat;
import dev.hexforge.onnx.qnn.QnnPreflight;
import dev.hexforge.onnx.runtime.OnnxLm;
import dev.hexforge.progress.Progress;
import dev.hexforge.quant.onnx.MatMulNBitsFormat;
import dev.hexforge.quant.onnx.QdqFormat;
import dev.hexforge.testing.Fixtures;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Quantized ONNX exports (QDQ and MatMulNBits, both variants) against the reference perplexities. */
class QuantizedExportTest {
    @TempDir
    static Path tmp;
    static Checkpoint ckpt;
    static DecoderWeights base;
    static JsonNode ppl;
    static int[] evalIds;

    @BeforeAll
    static void load() {
        ckpt = Checkpoint.open(Fixtures.qwen2Tiny());
        base = DecoderWeights.load(ckpt);
        ppl = Fixtures.json(Fixtures.reference("perplexity.json")).path("results");
        evalIds = Fixtures.evalTxtIds();
    }

    @AfterAll
    static void close() {
        ckpt.close();
    }

    static QuantSpec spec(int bits) {
        return bits == 8 ? QuantSpec.int8PerChannel() : QuantSpec.int4Group128();
    }

    static String key(int bits) {
        return bits == 8 ? "int8_sym_per_channel_rtn" : "int4_asym_g128_rtn";
    }

    static void assertPerplexity(double expected, CausalLm lm, String what) {
        Perplexity.Result r = Perplexity.evaluate(lm, evalIds, 128, null);
        double rel = Math.abs(r.perplexity() / expected - 1);
        assertTrue(rel < 1e-3, what + ": perplexity " + r.perplexity() + " vs reference " + expected);
    }

    @ParameterizedTest
    @CsvSource({"8", "4"})
    void fakeQuantizedJavaForwardMatchesReferencePerplexity(int bits) {
        QuantizedModel qm = QuantizedModel.rtn(ckpt, spec(bits), List.of());
        assertPerplexity(ppl.path(key(bits)).path("eval.txt").path("perplexity").asDouble(),
                new DecoderForward(qm.fakeQuantized(base)), "java fake-quant int" + bits);
    }

    @ParameterizedTest
    @CsvSource({"8", "4"})
    void theCpuFastPathComputesWithInt8ActivationsWithinOnePercentOfTheReferencePerplexity(int bits) throws Exception {
        QuantizedModel qm = QuantizedModel.rtn(ckpt, spec(bits), List.of());
        Path out = tmp.resolve(bits + "nbits-int8-activations");
        DecoderExporter.export(ckpt, out, ExportOptions.dynamic(), new MatMulNBitsFormat(qm, MatMulNBitsFormat.INT8_ACTIVATIONS), Progress.NONE);
        dev.hexforge.onnx.proto.Onnx.ModelProto m;
        try (var in = java.nio.file.Files.newInputStream(out.resolve("onnx/model.onnx"))) {
            m = dev.hexforge.onnx.proto.Onnx.ModelProto.parseFrom(in);
        }
        List<Long> levels = m.getGraph().getNodeList().stream().filter(n -> n.getOpType().equals("MatMulNBits"))
                .map(n -> n.getAttributeList().stream().filter(a -> a.getName().equals("accuracy_level")).findFirst().orElseThrow().getI())
                .distinct().toList();
        assertEquals(List.of(4L), levels);
        double expected = ppl.path(key(bits)).path("eval.txt").path("perplexity").asDouble();
        try (CausalLm lm = OnnxLm.open(out, 2)) {
            double got = Perplexity.evaluate(lm, evalIds, 128, null).perplexity();
            assertTrue(Math.abs(got / expected - 1) < 0.01, "int" + bits + " with int8 activations: perplexity " + got + " vs " + expected);
        }
    }

    @ParameterizedTest
    @CsvSource({"8,qdq,dynamic", "4,qdq,dynamic", "8,qdq,static", "4,qdq,static",
            "8,matmulnbits,dynamic", "4,matmulnbits,dynamic"})
    void quantizedExportMatchesReferencePerplexityAndFakeQuantGreedy(int bits, String format, String variant) {
        QuantizedModel qm = QuantizedModel.rtn(ckpt, spec(bits), List.of());
        LinearFormat f = format.equals("qdq") ? new QdqFormat(qm) : new MatMulNBitsFormat(qm, MatMulNBitsFormat.EXACT);
        ExportOptions opt = variant.equals("static") ? ExportOptions.staticShapes(128, 512) : ExportOptions.dynamic();
        Path out = tmp.resolve(bits + format + variant);
        DecoderExporter.export(ckpt, out, opt, f, Progress.NONE);
        DecoderForward reference = new DecoderForward(qm.fakeQuantized(base));
        try (CausalLm lm = OnnxLm.open(out, 2)) {
            assertPerplexity(ppl.path(key(bits)).path("eval.txt").path("perplexity").asDouble(), lm, out.getFileName().toString());
            for (JsonNode p : Fixtures.json(Fixtures.reference("reference.json")).path("prompts")) {
                int[] ids = Fixtures.ints(p.path("input_ids"));
                assertArrayEquals(Generator.generate(reference, ids, Generator.Options.greedy(16), null),
                        Generator.generate(lm, ids, Generator.Options.greedy(16), null), p.path("name").asText());
            }
        }
        if (variant.equals("static")) {
            QnnPreflight.Report r = QnnPreflight.check(out.resolve("onnx/prompt.onnx"));
            assertTrue(r.clean(), r.problems().toString());
            assertTrue(r.ops().stream().anyMatch(o -> o.opType().equals("DequantizeLinear")));
        }
    }

    @Test
    void awqExportCarriesTheFoldedNormsAndMatchesTheFakeQuantizedForward() {
        dev.hexforge.quant.calib.CalibrationSet calib;
        try (dev.hexforge.tokenizer.Tokenizer tok = dev.hexforge.tokenizer.Tokenizer.load(Fixtures.qwen2Tiny())) {
            calib = dev.hexforge.quant.calib.CalibrationSet.load(Fixtures.root().resolve("calib.jsonl"), tok, 16, 128, 0);
        }
        QuantizedModel qm = dev.hexforge.quant.awq.Awq.run(LayerSource.of(base), calib, QuantSpec.int4Group128(), List.of("v_proj"), Progress.NONE).model();
        Path out = tmp.resolve("awq-static");
        DecoderExporter.export(ckpt, out, ExportOptions.staticShapes(128, 512), new QdqFormat(qm), Progress.NONE);
        DecoderForward reference = new DecoderForward(qm.fakeQuantized(base));
        try (CausalLm lm = OnnxLm.open(out, 2)) {
            for (JsonNode p : Fixtures.json(Fixtures.reference("reference.json")).path("prompts")) {
                int[] ids = Fixtures.ints(p.path("input_ids"));
                assertArrayEquals(Generator.generate(reference, ids, Generator.Options.greedy(16), null),
                        Generator.generate(lm, ids, Generator.Options.greedy(16), null), p.path("name").asText());
            }
        }
    }

    @Test
    void aimetEncodingsDescribeEveryChannelAndTheKeptLayers() {
        QuantizedModel qm = QuantizedModel.rtn(ckpt, QuantSpec.int8PerChannel(), List.of("q_proj"));
        var enc = AimetEncodings.of(qm, List.of("q_proj"));
        assertEquals("0.5.0", enc.path("version").asText());
        var down = enc.path("param_encodings").path("model.layers.0.mlp.down_proj.weight");
        assertEquals(128, down.size(), "one entry per output channel");
        var first = down.get(0);
        assertEquals("True", first.path("is_symmetric").asText());
        assertEquals(-128, first.path("offset").asInt());
        float scale = qm.linears().get("model.layers.0.mlp.down_proj.weight").scale(0, 0);
        assertEquals(scale, first.path("scale").floatValue(), 0f);
        assertEquals(-128.0 * scale, first.path("min").asDouble(), 1e-9);
        assertEquals(127.0 * scale, first.path("max").asDouble(), 1e-9);
        var kept = enc.path("param_encodings").path("model.layers.2.self_attn.q_proj.weight").get(0);
        assertEquals("float", kept.path("dtype").asText());
        assertEquals(16, kept.path("bitwidth").asInt());
        QuantizedModel grouped = QuantizedModel.rtn(ckpt, QuantSpec.int4Group128(), List.of());
        assertThrows(QuantizationException.class, () -> AimetEncodings.of(grouped, List.of()));
    }

    @Test
    void keptLinearsStayFloat() {
        QuantizedModel qm = QuantizedModel.rtn(ckpt, QuantSpec.int8PerChannel(), List.of("q_proj", "v_proj"));
        assertEquals(4 * 5, qm.linears().size());
        assertTrue(qm.linears().keySet().stream().noneMatch(n -> n.contains("q_proj") || n.contains("v_proj")));
    }

    @Test
    void matMulNBitsRefusesWhatItCannotRun() {
        QuantizedModel three = QuantizedModel.rtn(ckpt, new QuantSpec(3, 128, false), List.of());
        assertThrows(QuantizationException.class, () -> new MatMulNBitsFormat(three, MatMulNBitsFormat.EXACT));
        QuantizedModel odd = QuantizedModel.rtn(ckpt, new QuantSpec(4, 96, false), List.of());
        QuantizationException e = assertThrows(QuantizationException.class, () -> new MatMulNBitsFormat(odd, MatMulNBitsFormat.EXACT));
        assertTrue(e.getMessage().contains("16, 32, 64, 128 or 256"), e.getMessage());
    }
}
