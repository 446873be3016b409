package dev.hexforge.quant;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;

/**
 * Calibration samples and an evaluation text shipped with Hexforge (English and Chinese), used when a job names
 * none: 128 calibration samples and the held-out text of the bundled tiny model's corpus.
 */
public final class BundledData {
    private BundledData() {
    }

    public static Path calibration(Path workDir) {
        return extract("calib.jsonl", workDir);
    }

    public static Path evalText(Path workDir) {
        return extract("eval.txt", workDir);
    }

    private static Path extract(String name, Path workDir) {
        Path target = workDir.resolve("bundled-" + name);
        if (Files.isRegularFile(target)) {
            return target;
        }
        try (InputStream in = BundledData.class.getResourceAsStream("/dev/hexforge/quant/data/" + name)) {
            if (in == null) {
                throw new IllegalStateException("bundled " + name + " is missing from the build");
            }
            Files.createDirectories(workDir);
            Files.copy(in, target, StandardCopyOption.REPLACE_EXISTING);
            return target;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
