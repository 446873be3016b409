package dev.hexforge.io;

import com.code_intelligence.jazzer.junit.FuzzTest;
import dev.hexforge.testing.Fuzzing;

import java.io.ByteArrayInputStream;
import java.nio.file.Path;

/** An upload of any bytes as a model archive (zip, tar, tar.gz): listed and unpacked within limits, or refused. */
class ModelArchiveFuzzTest {
    private static final ModelArchive.Limits LIMITS = new ModelArchive.Limits(50, 1 << 20, 20);

    @FuzzTest(maxDuration = Fuzzing.DURATION)
    void archive(byte[] bytes) {
        Path dir = Fuzzing.emptyFolder().resolve("unpacked");
        Fuzzing.refusedClearly(() -> {
            ModelArchive.scan(new ByteArrayInputStream(bytes), LIMITS);
            ModelArchive.extract(new ByteArrayInputStream(bytes), dir, LIMITS);
        }, ModelArchive.ArchiveException.class);
    }
}
