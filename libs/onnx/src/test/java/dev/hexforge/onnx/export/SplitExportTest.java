package dev.hexforge.onnx.export;

import com.fasterxml.jackson.databind.JsonNode;
import dev.hexforge.checkpoint.Checkpoint;
import dev.hexforge.generate.CausalLm;
import dev.hexforge.generate.Generator;
import dev.hexforge.onnx.qnn.QnnPreflight;
import dev.hexforge.onnx.runtime.OnnxLm;
import dev.hexforge.progress.Progress;
import dev.hexforge.safetensors.SafetensorsFile;
import dev.hexforge.testing.Fixtures;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A static export over the per-graph weight limit is split by layers into parts that each stay under it, and the
 * parts run as a pipeline give the reference's logits. (qwen2-tiny with a 2 MB limit stands in for a 7B model and the
 * HTP's 2 GB: embedding 1 MB, layers 0.8 MB each.)
 */
class SplitExportTest {
    static final long LIMIT = 2_000_000;
    @TempDir
    Path tmp;

    @Test
    void aStaticExportOverTheLimitIsSplitIntoPartsThatRunAsOneModel() throws Exception {
        Path split = tmp.resolve("split");
        try (Checkpoint ckpt = Checkpoint.open(Fixtures.qwen2Tiny())) {
            DecoderExporter.export(ckpt, split, new ExportOptions(Variant.STATIC, 32, 128, 17, LIMIT), Progress.NONE);
        }
        ExportInfo info = ExportInfo.read(split);
        assertEquals(List.of("prompt.0", "prompt.1", "prompt.2"), info.roles("prompt"));
        assertEquals(List.of("token.0", "token.1", "token.2"), info.roles("token"));
        assertEquals(1, Files.list(split.resolve("onnx")).filter(p -> p.toString().endsWith(".onnx_data")).count(), "one weights file");
        for (String role : info.graphs().keySet()) {
            QnnPreflight.Report r = QnnPreflight.check(info.graph(split, role));
            assertTrue(r.weightBytes() <= LIMIT && r.weightBytes() > 500_000, role + ": " + r.weightBytes() + " bytes");
            assertTrue(r.dynamicDimensions().isEmpty() && r.unsupportedTypes().isEmpty(), role + ": " + r.problems());
        }

        try (CausalLm lm = OnnxLm.open(split, 1); SafetensorsFile ref = SafetensorsFile.open(Fixtures.reference("logits.safetensors"))) {
            for (String key : new String[]{"en", "zh", "chatml"}) {
                float max = maxLogitError(lm, ref, key);
                assertTrue(max <= 1e-4f, key + ": max |dlogit| " + max);
            }
            for (JsonNode p : Fixtures.json(Fixtures.reference("reference.json")).path("prompts")) {
                int[] ids = Fixtures.ints(p.path("input_ids"));
                int[] expected = Fixtures.ints(p.path("greedy_new_ids"));
                int exact = p.path("greedy_exact_prefix_len").asInt();
                if (ids.length + expected.length > info.contextLength()) {
                    continue;
                }
                int[] got = Generator.generate(lm, ids, Generator.Options.greedy(expected.length), null);
                assertArrayEquals(Arrays.copyOf(expected, exact), Arrays.copyOf(got, exact),
                        p.path("name").asText() + ": prompt graph parts, then token graph parts");
            }
        }
    }

    /** The largest difference between the model's logits for the reference prompt {@code key} and the reference's. */
    static float maxLogitError(CausalLm lm, SafetensorsFile ref, String key) {
        long[] l = new long[(int) ref.info(key + ".input_ids").numel()];
        ref.bytes(key + ".input_ids").asLongBuffer().get(l);
        int[] ids = Arrays.stream(l).mapToInt(x -> (int) x).toArray();
        float[] expected = ref.floats(key + ".logits");
        float[][] got = lm.start(ids.length).appendAll(ids);
        float max = 0;
        for (int t = 0; t < ids.length; t++) {
            for (int i = 0; i < got[t].length; i++) {
                max = Math.max(max, Math.abs(got[t][i] - expected[t * got[t].length + i]));
            }
        }
        return max;
    }

    @Test
    void aLayerThatCannotFitInAnyGraphIsRefusedWithTheReason() {
        try (Checkpoint ckpt = Checkpoint.open(Fixtures.qwen2Tiny())) {
            ExportException e = assertThrows(ExportException.class, () -> DecoderExporter.export(ckpt, tmp.resolve("x"),
                    new ExportOptions(Variant.STATIC, 32, 128, 17, 600_000), Progress.NONE));
            assertTrue(e.getMessage().contains("layer 0") && e.getMessage().contains("fewer bits"), e.getMessage());
            assertTrue(!Files.exists(tmp.resolve("x")), "nothing half-written");
        }
    }
}
