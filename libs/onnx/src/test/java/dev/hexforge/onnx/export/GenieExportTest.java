package dev.hexforge.onnx.export;

import dev.hexforge.checkpoint.Checkpoint;
import dev.hexforge.generate.CausalLm;
import dev.hexforge.onnx.proto.Onnx.ModelProto;
import dev.hexforge.onnx.proto.Onnx.TensorShapeProto;
import dev.hexforge.onnx.proto.Onnx.ValueInfoProto;
import dev.hexforge.onnx.qnn.QnnPreflight;
import dev.hexforge.onnx.runtime.OnnxLm;
import dev.hexforge.progress.Progress;
import dev.hexforge.safetensors.SafetensorsFile;
import dev.hexforge.testing.Fixtures;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The Genie layout of the static export on qwen2-tiny (a 2 MB per-graph limit standing in for the HTP's 2 GB, so the
 * layers spread over parts): Genie's graph names, parts and IO, and the parts run as Genie runs them give the PyTorch
 * reference's logits.
 */
class GenieExportTest {
    static final long LIMIT = 2_000_000;
    @TempDir
    Path tmp;

    @Test
    void theGenieLayoutHasGeniesPartsNamesAndInterfaceAndComputesTheReferenceLogits() throws Exception {
        Path out = tmp.resolve("genie");
        try (Checkpoint ckpt = Checkpoint.open(Fixtures.qwen2Tiny())) {
            DecoderExporter.export(ckpt, out, new ExportOptions(Variant.GENIE, 64, 512, 17, LIMIT), Progress.NONE);
        }
        ExportInfo info = ExportInfo.read(out);
        assertEquals(Variant.GENIE, info.variant());
        // embedding; layers 0-1; layers 2-3; the tied head (1 MB) alone
        int n = 4;
        assertEquals(List.of("prompt.0", "prompt.1", "prompt.2", "prompt.3"), info.roles("prompt"));
        for (int p = 0; p < n; p++) {
            String prompt = "prompt_ar64_cl512_" + (p + 1) + "_of_" + n;
            String token = "token_ar1_cl512_" + (p + 1) + "_of_" + n;
            assertEquals("onnx/" + prompt + ".onnx", info.graphs().get("prompt." + p));
            assertEquals("onnx/" + token + ".onnx", info.graphs().get("token." + p));
            assertEquals(prompt, read(info.graph(out, "prompt." + p)).getGraph().getName(), "the graph is named as Genie knows it");
        }

        assertEquals(Map.of("input_ids", "INT32[1, 64]"), io(out, info, "prompt.0", true));
        assertEquals(Map.of("hidden_states.0", "FLOAT[64, 128]"), io(out, info, "prompt.0", false));
        Map<String, String> in = io(out, info, "prompt.1", true);
        assertEquals("FLOAT[1, 1, 64, 16]", in.get("position_ids_cos"), "head_dim / 2");
        assertEquals("FLOAT[1, 1, 64, 16]", in.get("position_ids_sin"));
        assertEquals("FLOAT[1, 1, 64, 512]", in.get("attention_mask"));
        assertEquals("FLOAT[2, 1, 32, 448]", in.get("past_key_0_in"), "keys transposed: [kv_heads, 1, head_dim, CL - N]");
        assertEquals("FLOAT[2, 1, 448, 32]", in.get("past_value_0_in"));
        assertEquals(List.of("attention_mask", "hidden_states.0", "past_key_0_in", "past_key_1_in", "past_value_0_in",
                "past_value_1_in", "position_ids_cos", "position_ids_sin"), in.keySet().stream().sorted().toList());
        Map<String, String> tokenOut = io(out, info, "token.2", false);
        assertEquals("FLOAT[2, 1, 32, 1]", tokenOut.get("past_key_3_out"), "the new position's key, transposed");
        assertEquals("FLOAT[2, 1, 1, 32]", tokenOut.get("past_value_3_out"));
        assertEquals("FLOAT[1, 128]", tokenOut.get("hidden_states.4"));
        assertEquals(Map.of("logits", "FLOAT[1, 64, 2048]"), io(out, info, "prompt.3", false));
        assertEquals(Map.of("hidden_states.4", "FLOAT[64, 128]"), io(out, info, "prompt.3", true), "the head part attends to nothing");
        for (String role : info.graphs().keySet()) {
            QnnPreflight.Report r = QnnPreflight.check(info.graph(out, role));
            assertTrue(r.weightBytes() <= LIMIT, role + ": " + r.weightBytes());
            assertTrue(r.dynamicDimensions().isEmpty() && r.unsupportedTypes().isEmpty(), role + ": " + r.problems());
        }

        try (CausalLm lm = OnnxLm.open(out, 1); SafetensorsFile ref = SafetensorsFile.open(Fixtures.reference("logits.safetensors"))) {
            for (String key : new String[]{"en", "zh", "chatml"}) {
                // the prompt graph for the first 64, then the token graph: both cache layouts are exercised
                float max = SplitExportTest.maxLogitError(lm, ref, key);
                assertTrue(max <= 1e-4f, key + ": max |dlogit| " + max);
            }
        }
    }

    @Test
    void genieShapesOutsideGeniesRangeAreRefusedBeforeAnythingIsWritten() {
        IllegalArgumentException n = assertThrows(IllegalArgumentException.class,
                () -> new ExportOptions(Variant.GENIE, 32, 512, 17, LIMIT));
        assertTrue(n.getMessage().contains("[64, 128]"), n.getMessage());
        IllegalArgumentException cl = assertThrows(IllegalArgumentException.class,
                () -> new ExportOptions(Variant.GENIE, 64, 256, 17, LIMIT));
        assertTrue(cl.getMessage().contains("512"), cl.getMessage());
        try (Checkpoint ckpt = Checkpoint.open(Fixtures.qwen2Tiny())) {
            ExportException e = assertThrows(ExportException.class, () -> DecoderExporter.export(ckpt, tmp.resolve("x"),
                    new ExportOptions(Variant.GENIE, 128, 1024, 17, LIMIT), Progress.NONE));
            assertTrue(e.getMessage().contains("max_position_embeddings (512)"), e.getMessage());
        }
        assertFalse(Files.exists(tmp.resolve("x")));
    }

    private static ModelProto read(Path graph) throws Exception {
        try (InputStream s = Files.newInputStream(graph)) {
            return ModelProto.parseFrom(s);
        }
    }

    /** A graph's inputs or outputs as name → TYPE[dims]. */
    private static Map<String, String> io(Path dir, ExportInfo info, String role, boolean inputs) throws Exception {
        var g = read(info.graph(dir, role)).getGraph();
        Map<String, String> m = new LinkedHashMap<>();
        for (ValueInfoProto v : inputs ? g.getInputList() : g.getOutputList()) {
            var t = v.getType().getTensorType();
            List<Long> dims = t.getShape().getDimList().stream().map(TensorShapeProto.Dimension::getDimValue).toList();
            m.put(v.getName(), dev.hexforge.onnx.proto.Onnx.TensorProto.DataType.forNumber(t.getElemType()) + dims.toString());
        }
        return m;
    }
}
