package dev.hexforge.io;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;

/** Folder helpers shared by every pass that writes a folder and must leave nothing half-written. */
public final class Folders {
    private Folders() {
    }

    /** True when {@code dir} does not exist or is an empty folder: a safe destination for a new output. */
    public static boolean isMissingOrEmpty(Path dir) {
        if (!Files.exists(dir)) {
            return true;
        }
        try (Stream<Path> s = Files.list(dir)) {
            return s.findAny().isEmpty();
        } catch (IOException e) {
            throw new UncheckedIOException(dir + ": " + e.getMessage(), e);
        }
    }

    /** Deletes a folder and everything in it; nothing happens when it does not exist. */
    public static void deleteTree(Path dir) {
        if (!Files.exists(dir)) {
            return;
        }
        try (Stream<Path> s = Files.walk(dir)) {
            for (Path p : s.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("deleting " + dir + ": " + e.getMessage(), e);
        }
    }

    /** Deletes a folder, ignoring failures: for cleaning up after another error that is the one to report. */
    public static void deleteQuietly(Path dir) {
        try {
            deleteTree(dir);
        } catch (RuntimeException ignored) {
            // the caller reports the original failure
        }
    }
}
