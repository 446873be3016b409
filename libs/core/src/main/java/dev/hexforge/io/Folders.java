package dev.hexforge.io;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.SeekableByteChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileAttribute;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Comparator;
import java.util.Set;
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
            Files.deleteIfExists(tmp);
            // created with mode 600, so the secret is never readable by others, not even for a moment
            Set<OpenOption> options = Set.of(StandardOpenOption.CREATE_NEW,
                    StandardOpenOption.WRITE);
            FileAttribute<?>[] attrs = parent.getFileSystem().supportedFileAttributeViews().contains("posix")
                    ? new FileAttribute<?>[]{PosixFilePermissions.asFileAttribute(
                    PosixFilePermissions.fromString("rw-------"))}
                    : new FileAttribute<?>[0];
            try (SeekableByteChannel ch = Files.newByteChannel(tmp, options, attrs)) {
                ch.write(ByteBuffer.wrap(text.getBytes(StandardCharsets.UTF_8)));
            }
            Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            throw new UncheckedIOException("writing " + file + ": " + e.getMessage(), e);
        }
    }

    /** Bytes of the regular files under a folder (0 when it is gone). */
    public static long size(Path dir) {
        try (Stream<Path> s = Files.walk(dir)) {
            return s.filter(p -> Files.isRegularFile(p, LinkOption.NOFOLLOW_LINKS)).mapToLong(p -> {
                try {
                    return Files.size(p);
                } catch (IOException e) {
                    return 0;
                }
            }).sum();
        } catch (IOException | UncheckedIOException e) {
            return 0;
        }
    }

    /** Copies a folder's regular files and folders into {@code to}; a link or special file is refused by name. */
    public static void copyTree(Path from, Path to) {
        try (Stream<Path> s = Files.walk(from)) {
            for (Path p : s.toList()) {
                Path t = to.resolve(from.relativize(p).toString());
                if (Files.isDirectory(p, LinkOption.NOFOLLOW_LINKS)) {
                    Files.createDirectories(t);
                } else if (Files.isRegularFile(p, LinkOption.NOFOLLOW_LINKS)) {
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
