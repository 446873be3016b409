package dev.hexforge.onnx.qnn;

import dev.hexforge.checkpoint.Checkpoint;
import dev.hexforge.onnx.export.DecoderExporter;
import dev.hexforge.onnx.export.ExportOptions;
import dev.hexforge.progress.Progress;
import dev.hexforge.testing.Fixtures;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;

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

    @Test
    void garbageFileIsAClearError() throws Exception {
        Path f = tmp.resolve("junk.onnx");
        Files.write(f, new byte[]{1, 2, 3, 4, 5});
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> QnnPreflight.check(f));
        assertTrue(e.getMessage().contains("junk.onnx"), e.getMessage());
    }
}
