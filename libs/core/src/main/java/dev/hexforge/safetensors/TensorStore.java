package dev.hexforge.safetensors;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.Closeable;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The tensors of a checkpoint folder: a single {@code model.safetensors} or the shards named by
 * {@code model.safetensors.index.json}. Looks tensors up by name across shards.
 */
public final class TensorStore implements Closeable {
    public static final String SINGLE_FILE = "model.safetensors";
    public static final String INDEX_FILE = "model.safetensors.index.json";

    private final Map<String, SafetensorsFile> byTensor;
    private final List<SafetensorsFile> files;

    private TensorStore(Map<String, SafetensorsFile> byTensor, List<SafetensorsFile> files) {
        this.byTensor = byTensor;
        this.files = files;
    }

    public static TensorStore open(Path dir) {
        Path index = dir.resolve(INDEX_FILE);
        if (Files.isRegularFile(index)) {
            return openSharded(dir, index);
        }
        Path single = dir.resolve(SINGLE_FILE);
        if (!Files.isRegularFile(single)) {
            throw new SafetensorsException(dir + ": no " + SINGLE_FILE + " or " + INDEX_FILE + " found");
        }
        SafetensorsFile f = SafetensorsFile.open(single);
        Map<String, SafetensorsFile> map = new LinkedHashMap<>();
        f.tensors().forEach(t -> map.put(t.name(), f));
        return new TensorStore(map, List.of(f));
    }

    private static TensorStore openSharded(Path dir, Path index) {
        JsonNode root;
        try {
            root = new ObjectMapper().enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION).readTree(index.toFile());
        } catch (IOException e) {
            String first = String.valueOf(e.getMessage()).lines().findFirst().orElse("");
            throw new SafetensorsException(INDEX_FILE + (first.startsWith("Duplicate field")
                    ? ": a tensor is listed twice in \"weight_map\" (" + first + ")" : ": not valid JSON: " + first), e);
        }
        JsonNode weightMap = root == null ? null : root.get("weight_map");
        if (weightMap == null || !weightMap.isObject() || weightMap.isEmpty()) {
            throw new SafetensorsException(INDEX_FILE + ": missing or empty \"weight_map\"");
        }
        Map<String, SafetensorsFile> shards = new LinkedHashMap<>();
        Map<String, SafetensorsFile> byTensor = new LinkedHashMap<>();
        Path folder = realPath(dir);
        try {
            for (Map.Entry<String, JsonNode> e : (Iterable<Map.Entry<String, JsonNode>>) weightMap::fields) {
                String shardName = e.getValue().asText();
                if (shardName.contains("/") || shardName.contains("\\") || shardName.startsWith(".")) {
                    throw new SafetensorsException(INDEX_FILE + ": shard name '" + shardName + "' of tensor '" + e.getKey()
                            + "' is not a plain file name in the checkpoint folder");
                }
                SafetensorsFile shard = shards.get(shardName);
                if (shard == null) {
                    Path p = dir.resolve(shardName);
                    if (!Files.isRegularFile(p)) {
                        throw new SafetensorsException(INDEX_FILE + ": shard '" + shardName + "' (for tensor '" + e.getKey()
                                + "') does not exist");
                    }
                    if (!realPath(p).getParent().equals(folder)) {
                        throw new SafetensorsException(INDEX_FILE + ": shard '" + shardName + "' (for tensor '" + e.getKey()
                                + "') is a link to a file outside the checkpoint folder");
                    }
                    shard = SafetensorsFile.open(p);
                    shards.put(shardName, shard);
                }
                if (!shard.contains(e.getKey())) {
                    throw new SafetensorsException(INDEX_FILE + ": tensor '" + e.getKey() + "' is mapped to '" + shardName
                            + "' but that shard does not contain it");
                }
                byTensor.put(e.getKey(), shard);
            }
            for (SafetensorsFile shard : shards.values()) {
                for (TensorInfo t : shard.tensors()) {
                    SafetensorsFile owner = byTensor.get(t.name());
                    if (owner != shard) {
                        throw new SafetensorsException(shard.path().getFileName() + ": tensor '" + t.name()
                                + "' is not listed for this shard in " + INDEX_FILE);
                    }
                }
            }
        } catch (RuntimeException ex) {
            shards.values().forEach(SafetensorsFile::close);
            throw ex;
        }
        return new TensorStore(byTensor, new ArrayList<>(shards.values()));
    }

    private static Path realPath(Path p) {
        try {
            return p.toRealPath();
        } catch (IOException e) {
            throw new SafetensorsException(p + ": cannot be resolved: " + e.getMessage(), e);
        }
    }

    public Collection<String> names() {
        return byTensor.keySet();
    }

    public boolean contains(String name) {
        return byTensor.containsKey(name);
    }

    public TensorInfo info(String name) {
        return file(name).info(name);
    }

    /** The file holding the tensor (for streaming its bytes straight from disk). */
    public SafetensorsFile file(String name) {
        SafetensorsFile f = byTensor.get(name);
        if (f == null) {
            throw new SafetensorsException("checkpoint has no tensor named '" + name + "'");
        }
        return f;
    }

    public ByteBuffer bytes(String name) {
        return file(name).bytes(name);
    }

    public float[] floats(String name) {
        return file(name).floats(name);
    }

    public List<SafetensorsFile> files() {
        return files;
    }

    @Override
    public void close() {
        files.forEach(SafetensorsFile::close);
    }
}
