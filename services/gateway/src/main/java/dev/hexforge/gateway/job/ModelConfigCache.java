package dev.hexforge.gateway.job;

import dev.hexforge.checkpoint.ModelConfig;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.FileTime;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * The {@code config.json} of the server folders jobs name, read once while the file stays the same (its size,
 * modification time and file key; a file that changes or is replaced is read again): the gateway estimates the
 * memory of every submission, and most name the same few models. Holds the most recently used {@code capacity}
 * folders. A folder whose config cannot be read is not remembered, so the reader's error is raised each time.
 */
final class ModelConfigCache {
    private record Entry(Object fileKey, long size, FileTime modified, ModelConfig config) {
    }

    private final Map<Path, Entry> entries;

    ModelConfigCache(int capacity) {
        this.entries = new LinkedHashMap<>(16, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<Path, Entry> eldest) {
                return size() > capacity;
            }
        };
    }

    /** As {@link ModelConfig#read}, for a folder's real path. */
    ModelConfig read(Path folder) {
        BasicFileAttributes a;
        try {
            a = Files.readAttributes(folder.resolve("config.json"), BasicFileAttributes.class);
        } catch (IOException e) {
            return ModelConfig.read(folder); // missing or unreadable: the reader says which
        }
        FileTime modified = a.lastModifiedTime(); // to the nanosecond where the file system keeps it
        synchronized (entries) {
            Entry e = entries.get(folder);
            if (e != null && e.size() == a.size() && e.modified().equals(modified) && Objects.equals(e.fileKey(), a.fileKey())) {
                return e.config();
            }
        }
        ModelConfig config = ModelConfig.read(folder);
        synchronized (entries) {
            entries.put(folder, new Entry(a.fileKey(), a.size(), modified, config));
        }
        return config;
    }
}
