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

    /**
     * Writes a secret (a key, a token) readable by its owner only (mode 600 where the file system has modes), complete
     * or not at all: written beside the file, then moved into place. Parent folders are created.
     */
    public static void writePrivate(Path file, String text) {
        try {
            Path parent = file.toAbsolutePath().getParent();
            Files.createDirectories(parent);
            Path tmp = parent.resolve(file.getFileName() + ".partial");
            Files.writeString(tmp, text);
            try {
                Files.setPosixFilePermissions(tmp, java.nio.file.attribute.PosixFilePermissions.fromString("rw-------"));
            } catch (UnsupportedOperationException ignored) {
                // not a POSIX file system
            }
            Files.move(tmp, file, java.nio.file.StandardCopyOption.REPLACE_EXISTING, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            throw new UncheckedIOException("writing " + file + ": " + e.getMessage(), e);
        }
    }

    /** Copies a folder's regular files and folders into {@code to}; a link or special file is refused by name. */
    public static void copyTree(Path from, Path to) {
        try (Stream<Path> s = Files.walk(from)) {
            for (Path p : s.toList()) {
                Path t = to.resolve(from.relativize(p).toString());
                if (Files.isDirectory(p, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
                    Files.createDirectories(t);
                } else if (Files.isRegularFile(p, java.nio.file.LinkOption.NOFOLLOW_LINKS)) {
                    Files.copy(p, t);
                } else {
                    throw new IllegalArgumentException("'" + from.relativize(p) + "' in " + from + " is not a regular file");
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException("copying " + from + " to " + to + ": " + e.getMessage(), e);
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
