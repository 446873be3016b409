package dev.hexforge.onnx.qnn;

import dev.hexforge.checkpoint.Checkpoint;
import dev.hexforge.onnx.builder.GraphBuilder;
import dev.hexforge.onnx.export.DecoderExporter;
import dev.hexforge.onnx.export.ExportOptions;
import dev.hexforge.onnx.proto.Onnx.TensorProto.DataType;
import dev.hexforge.progress.Progress;
import dev.hexforge.testing.Fixtures;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class QnnPreflightTest {
    @TempDir
    static Path tmp;

    @BeforeAll
    static void export() {
        try (Checkpoint c = Checkpoint.open(Fixtures.qwen2Tiny())) {
            DecoderExporter.export(c, tmp.resolve("static"), ExportOptions.staticShapes(64, 256), Progress.NONE);
            DecoderExporter.export(c, tmp.resolve("dynamic"), ExportOptions.dynamic(), Progress.NONE);
        }
    }

    @Test
    void staticGraphsAreClean() {
        for (String g : new String[]{"prompt.onnx", "token.onnx"}) {
            QnnPreflight.Report r = QnnPreflight.check(tmp.resolve("static/onnx/" + g));
            assertTrue(r.clean(), g + ": " + r.problems());
            assertTrue(r.ops().stream().allMatch(o -> o.domain().isEmpty()), "no contrib domain");
            assertTrue(r.ops().stream().anyMatch(o -> o.opType().equals("Gemm")));
            assertTrue(r.weightBytes() > 4_000_000 && r.weightBytes() < 5_000_000, "tiny model weights: " + r.weightBytes());
        }
    }

    @Test
    void dynamicGraphIsReportedWithEveryProblem() {
        QnnPreflight.Report r = QnnPreflight.check(tmp.resolve("dynamic/onnx/model.onnx"));
        assertFalse(r.clean());
        String all = String.join("\n", r.problems());
        assertTrue(all.contains("op Range"), all);
        assertTrue(all.contains("input input_ids dim 0 'batch_size'"), all);
        assertTrue(all.contains("input input_ids is int64"), all);
    }

    /**
     * For a target that quantizes activations (w8a16), the float activations are found: today's static export
     * (weight-only or float) has them from its first op on, while a graph whose every activation passes a Q / DQ
     * pair is clean and the same graph with one activation left float fails naming it.
     */
    @Test
    void aQuantizedTargetFindsEveryFloatActivation() throws Exception {
        QnnPreflight.Report today = QnnPreflight.check(tmp.resolve("static/onnx/prompt.onnx"), Precision.W8A16);
        assertFalse(today.clean());
        assertTrue(today.floatActivations().contains("attention_mask") && today.floatActivations().size() > 100,
                today.floatActivations().size() + ": " + today.floatActivations());
        assertFalse(today.floatActivations().contains("input_ids") || today.floatActivations().contains("position_ids"), "ints");
        assertTrue(String.join("", today.problems()).contains("fp16 with 16-bit weights"), today.problems().toString());
        assertTrue(QnnPreflight.check(tmp.resolve("static/onnx/prompt.onnx"), Precision.W8).clean(), "weights only: as before");

        assertTrue(QnnPreflight.check(tiny(false), Precision.W8A16).clean(), QnnPreflight.check(tiny(false), Precision.W8A16).problems().toString());
        QnnPreflight.Report one = QnnPreflight.check(tiny(true), Precision.W8A16);
        assertEquals(List.of("mm"), one.floatActivations());
        assertFalse(one.clean());
    }

    /** x → Q → DQ → MatMul(DQ weights) → [Q → DQ] → Add(DQ bias) → Q → DQ → y; {@code leaveOne} skips the bracket. */
    private static Path tiny(boolean leaveOne) throws Exception {
        GraphBuilder g = new GraphBuilder("qdq", 17);
        var F = DataType.FLOAT;
        var U16 = DataType.UINT16;
        var U8 = DataType.UINT8;
        String x = g.input("x", F, 1L, 4L);
        String scale = g.constFloat(new long[]{}, 0.01f);
        String zp16 = g.inlineInitializer("zp16", U16, new long[]{}, new byte[]{0, (byte) 0x80});
        String zp8 = g.inlineInitializer("zp8", U8, new long[]{}, new byte[]{(byte) 128});
        String w = g.inlineInitializer("w", U8, new long[]{4, 4}, new byte[16]);
        String xq = g.op("/in", "DequantizeLinear", List.of(g.op("/in", "QuantizeLinear", List.of(x, scale, zp16)), scale, zp16));
        String wq = g.op("/w", "DequantizeLinear", List.of(w, scale, zp8));
        String mm = g.opNamed("mm", "/mm", "MatMul", List.of(xq, wq));
        String next = leaveOne ? mm : g.op("/mm", "DequantizeLinear", List.of(g.op("/mm", "QuantizeLinear", List.of(mm, scale, zp16)), scale, zp16));
        String b = g.op("/b", "DequantizeLinear", List.of(g.inlineInitializer("b", U8, new long[]{4}, new byte[4]), scale, zp8));
        String sum = g.op("/add", "Add", next, b);
        String y = g.op("/out", "DequantizeLinear", List.of(g.op("/out", "QuantizeLinear", List.of(sum, scale, zp16)), scale, zp16));
        g.rename(y, "y");
        g.output("y", F, 1L, 4L);
        Path f = tmp.resolve("qdq-" + leaveOne + ".onnx");
        Files.write(f, g.build("test", "0", Map.of()).toByteArray());
        return f;
    }

    /**
     * An op the HTP has no 16-bit form of (Cos) fails a w8a16 pre-flight when it is given 16-bit activations and
     * passes when they are 8-bit; an op with a 16-bit form (Sigmoid) passes at 16 bits; the exported w*a16 graphs
     * use only ops with 16-bit forms.
     */
    @Test
    void sixteenBitActivationsOnlyReachOpsTheHtpRunsAtSixteenBits() throws Exception {
        QnnPreflight.Report cos16 = QnnPreflight.check(unary("Cos", 16), Precision.W8A16);
        assertFalse(cos16.clean());
        assertTrue(String.join("\n", cos16.problems()).contains("op Cos (1x) takes 16-bit activations"), cos16.problems().toString());
        assertTrue(QnnPreflight.check(unary("Cos", 8), Precision.W8A8).clean());
        QnnPreflight.Report sigmoid = QnnPreflight.check(unary("Sigmoid", 16), Precision.W8A16);
        assertTrue(sigmoid.clean(), sigmoid.problems().toString());
        assertEquals(1, sigmoid.ops().stream().filter(o -> o.opType().equals("Sigmoid")).findFirst().orElseThrow().sixteenBitUses());
        QnnPreflight.Report mm = QnnPreflight.check(tiny(false), Precision.W8A16);
        assertTrue(mm.ops().stream().filter(o -> o.opType().equals("MatMul")).allMatch(o -> o.sixteenBitUses() == 1 && o.takes16Bit()));
    }

    /** x → Q → DQ → {@code op} → Q → DQ → y at {@code bits}. */
    private static Path unary(String op, int bits) throws Exception {
        GraphBuilder g = new GraphBuilder("qdq", 17);
        var F = DataType.FLOAT;
        String x = g.input("x", F, 1L, 4L);
        String scale = g.constFloat(new long[]{}, 0.01f);
        String zp = bits == 16
                ? g.inlineInitializer("zp", DataType.UINT16, new long[]{}, new byte[]{0, (byte) 0x80})
                : g.inlineInitializer("zp", DataType.UINT8, new long[]{}, new byte[]{(byte) 128});
        String xq = g.op("/in", "DequantizeLinear", List.of(g.op("/in", "QuantizeLinear", List.of(x, scale, zp)), scale, zp));
        String v = g.op("/op", op, List.of(xq));
        String y = g.op("/out", "DequantizeLinear", List.of(g.op("/out", "QuantizeLinear", List.of(v, scale, zp)), scale, zp));
        g.rename(y, "y");
        g.output("y", F, 1L, 4L);
        Path f = tmp.resolve(op + bits + ".onnx");
        Files.write(f, g.build("test", "0", Map.of()).toByteArray());
        return f;
    }

    @Test
    void garbageFileIsAClearError() throws Exception {
        Path f = tmp.resolve("junk.onnx");
        Files.write(f, new byte[]{1, 2, 3, 4, 5});
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> QnnPreflight.check(f));
        assertTrue(e.getMessage().contains("junk.onnx"), e.getMessage());
    }
}
