package dev.hexforge.standalone;

import dev.hexforge.client.ArtifactDownloader;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** `hexforge demo --out DIR` is refused before the fleet starts when DIR holds an earlier run's downloads. */
class DemoOutTest {
    @TempDir
    Path dir;

    @Test
    void anOutFolderWithAnEarlierDemoIsRefusedUpFrontAndAFreshOneIsNot() throws Exception {
        assertDoesNotThrow(() -> Demo.refuseEarlierRun(dir.resolve("new")));
        Files.createDirectories(dir.resolve("other-things"));
        assertDoesNotThrow(() -> Demo.refuseEarlierRun(dir));

        Files.createDirectories(dir.resolve("ort-qnn-int8-sm8650"));
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Demo.refuseEarlierRun(dir));
        assertTrue(e.getMessage().contains("ort-qnn-int8-sm8650") && e.getMessage().contains("choose another --out"), e.getMessage());

        Path partial = dir.resolve("partial");
        Files.createDirectories(ArtifactDownloader.staging(partial.resolve("onnx-static")));
        assertThrows(IllegalArgumentException.class, () -> Demo.refuseEarlierRun(partial), "a cut-off download counts too");
    }
}
