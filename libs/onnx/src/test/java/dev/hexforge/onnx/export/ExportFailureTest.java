package dev.hexforge.onnx.export;

import dev.hexforge.checkpoint.Checkpoint;
import dev.hexforge.progress.Progress;
import dev.hexforge.testing.Fixtures;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ExportFailureTest {
    @TempDir
    Path tmp;

    @Test
    void aFailureMidwayLeavesNoOutputBehind() throws Exception {
        Path out = tmp.resolve("out");
        Progress failing = (what, done, total) -> {
            if (done > total / 2) {
                throw new IllegalStateException("disk full (simulated)");
            }
        };
        try (Checkpoint c = Checkpoint.open(Fixtures.qwen2Tiny())) {
            assertThrows(IllegalStateException.class, () -> DecoderExporter.export(c, out, ExportOptions.dynamic(), failing));
        }
        assertFalse(Files.exists(out));
        try (Stream<Path> s = Files.list(tmp)) {
            assertEquals(0, s.count(), "no partial folder left");
        }
    }

    @Test
    void aNonEmptyDestinationIsRefused() throws Exception {
        Path out = Files.createDirectories(tmp.resolve("out"));
        Files.writeString(out.resolve("keep.txt"), "user data");
        try (Checkpoint c = Checkpoint.open(Fixtures.qwen2Tiny())) {
            ExportException e = assertThrows(ExportException.class,
                    () -> DecoderExporter.export(c, out, ExportOptions.dynamic(), Progress.NONE));
            assertTrue(e.getMessage().contains("not empty"), e.getMessage());
        }
        assertEquals("user data", Files.readString(out.resolve("keep.txt")));
    }

    @Test
    void impossibleStaticShapesAreRefused() {
        assertThrows(IllegalArgumentException.class, () -> ExportOptions.staticShapes(512, 512));
        assertThrows(IllegalArgumentException.class, () -> ExportOptions.staticShapes(128, 8192));
    }
}
