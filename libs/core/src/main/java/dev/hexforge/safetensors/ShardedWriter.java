package dev.hexforge.safetensors;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Writes a model's tensors as Hugging Face does: one {@code model.safetensors} when they fit in one shard, else
 * {@code model-0000N-of-0000M.safetensors} of at most {@code maxShardBytes} each (a tensor larger than that gets a
 * shard of its own) and {@code model.safetensors.index.json} ({@code metadata.total_size}, {@code weight_map} sorted
 * by name). Tensors keep their order and are never split. The index is written last, so a folder interrupted while
 * writing has no index that names a missing shard.
 */
public final class ShardedWriter {
    /** transformers' {@code max_shard_size} default for {@code save_pretrained}: "5GB", decimal. */
    public static final long DEFAULT_SHARD_BYTES = 5_000_000_000L;
    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

    private ShardedWriter() {
    }

    /** The entries in shards: consecutive runs of at most {@code maxShardBytes} (one entry where a single one is larger). */
    static List<List<SafetensorsWriter.Entry>> shards(List<SafetensorsWriter.Entry> entries, long maxShardBytes) {
        if (maxShardBytes < 1) {
            throw new IllegalArgumentException("the shard size must be positive, got " + maxShardBytes);
        }
        List<List<SafetensorsWriter.Entry>> shards = new ArrayList<>();
        List<SafetensorsWriter.Entry> current = new ArrayList<>();
        long bytes = 0;
        for (SafetensorsWriter.Entry e : entries) {
            if (!current.isEmpty() && bytes + e.byteSize() > maxShardBytes) {
                shards.add(current);
                current = new ArrayList<>();
                bytes = 0;
            }
            current.add(e);
            bytes += e.byteSize();
        }
        if (!current.isEmpty()) {
            shards.add(current);
        }
        return shards;
    }

    public static String shardName(int index, int count) {
        return String.format("model-%05d-of-%05d.safetensors", index, count);
    }

    /** Writes the tensors into {@code dir}; returns the files written, the index last when there is one. */
    public static List<Path> write(Path dir, Map<String, String> metadata, List<SafetensorsWriter.Entry> entries,
                                   long maxShardBytes) {
        List<List<SafetensorsWriter.Entry>> shards = shards(entries, maxShardBytes);
        if (shards.size() <= 1) {
            Path single = dir.resolve(TensorStore.SINGLE_FILE);
            SafetensorsWriter.write(single, metadata, entries);
            return List.of(single);
        }
        List<Path> written = new ArrayList<>();
        Map<String, String> weightMap = new TreeMap<>();
        long total = 0;
        for (int i = 0; i < shards.size(); i++) {
            String name = shardName(i + 1, shards.size());
            Path file = dir.resolve(name);
            SafetensorsWriter.write(file, metadata, shards.get(i));
            written.add(file);
            for (SafetensorsWriter.Entry e : shards.get(i)) {
                weightMap.put(e.name(), name);
                total += e.byteSize();
            }
        }
        ObjectNode index = JSON.createObjectNode();
        index.putObject("metadata").put("total_size", total);
        ObjectNode map = index.putObject("weight_map");
        weightMap.forEach(map::put);
        Path indexFile = dir.resolve(TensorStore.INDEX_FILE);
        Path tmp = dir.resolve(TensorStore.INDEX_FILE + ".partial");
        try {
            JSON.writeValue(tmp.toFile(), index);
            Files.move(tmp, indexFile, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            throw new UncheckedIOException("writing " + indexFile + ": " + e.getMessage(), e);
        }
        written.add(indexFile);
        return written;
    }
}
