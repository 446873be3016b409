package dev.hexforge.stage;

import dev.hexforge.contracts.StageEvents;
import dev.hexforge.io.Folders;
import dev.hexforge.io.ModelArchive;
import dev.hexforge.store.ArtifactStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.FileTime;
import java.security.DigestInputStream;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * A stage service's local cache of uploaded model archives, unpacked: one folder per archive content under
 * {@code dir}, reused by later attempts, the least recently used removed first when the cache would outgrow its size.
 */
final class ArchiveCache {
    private static final Logger LOG = LoggerFactory.getLogger(ArchiveCache.class);
    private final ArtifactStore store;
    private final Path dir;
    private volatile long maxBytes;

    ArchiveCache(ArtifactStore store, Path dir, long maxBytes) {
        this.store = store;
        this.dir = dir;
        this.maxBytes = maxBytes;
    }

    void maxBytes(long bytes) {
        this.maxBytes = bytes;
    }

    /**
     * An uploaded model archive, unpacked once per content into {@code <dir>/<sha256>} and reused by later
     * attempts; the archive's digest is checked as it streams in.
     */
    synchronized Path unpacked(StageEvents.ArtifactRef archive) {
        Path cached = dir.resolve(archive.sha256());
        if (Files.isDirectory(cached)) {
            touch(cached);
            return cached;
        }
        try {
            Files.createDirectories(dir);
            trim(archive.size());
            // unpacked beside it and moved into place whole: a read cut short leaves no half-unpacked folder to reuse
            Path partial = cached.resolveSibling(archive.sha256() + ".partial");
            Folders.deleteQuietly(partial);
            try {
                MessageDigest md = MessageDigest.getInstance("SHA-256");
                try (InputStream in = new DigestInputStream(store.getStream(archive.key()), md)) {
                    ModelArchive.extract(in, partial, ModelArchive.Limits.DEFAULT);
                    in.transferTo(OutputStream.nullOutputStream()); // the archive's tail, for the digest
                }
                String got = HexFormat.of().formatHex(md.digest());
                if (!got.equals(archive.sha256())) {
                    throw new ArtifactStore.StoreException("uploaded archive " + archive.id() + " is corrupt in storage: sha256 " + got
                            + ", uploaded as " + archive.sha256());
                }
                Files.move(partial, cached, StandardCopyOption.ATOMIC_MOVE);
            } finally {
                Folders.deleteQuietly(partial);
            }
            return cached;
        } catch (IOException | NoSuchAlgorithmException e) {
            throw new ArtifactStore.StoreException("unpacking uploaded archive " + archive.id() + ": " + e.getMessage(), e);
        }
    }

    private static void touch(Path dir) {
        try {
            Files.setLastModifiedTime(dir, FileTime.from(Instant.now()));
        } catch (IOException ignored) {
            // only the eviction order suffers
        }
    }

    /**
     * Keeps the cache under its size ({@code hexforge.worker.cache-size}): the least recently used folders go
     * first, until the one about to be unpacked (its archive size is the best guess) fits.
     */
    private void trim(long incoming) throws IOException {
        List<Path> entries;
        try (var s = Files.list(dir)) {
            entries = s.filter(Files::isDirectory).sorted(Comparator.comparing(p -> {
                try {
                    return Files.getLastModifiedTime(p);
                } catch (IOException e) {
                    return FileTime.fromMillis(0);
                }
            })).collect(Collectors.toCollection(ArrayList::new));
        }
        long total = 0;
        Map<Path, Long> sizes = new HashMap<>();
        for (Path p : entries) {
            long n = Folders.size(p);
            sizes.put(p, n);
            total += n;
        }
        while (!entries.isEmpty() && total + incoming > maxBytes) {
            Path oldest = entries.remove(0);
            LOG.info("unpacked-archive cache over {} bytes: removing {}", maxBytes, oldest.getFileName());
            Folders.deleteTree(oldest);
            total -= sizes.get(oldest);
        }
    }
}
