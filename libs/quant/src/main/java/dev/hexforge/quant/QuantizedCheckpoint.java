package dev.hexforge.quant;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.hexforge.checkpoint.Checkpoint;
import dev.hexforge.checkpoint.TensorNames;
import dev.hexforge.io.Folders;
import dev.hexforge.safetensors.DType;
import dev.hexforge.safetensors.SafetensorsFile;
import dev.hexforge.safetensors.SafetensorsWriter;
import dev.hexforge.safetensors.ShardedWriter;
import dev.hexforge.safetensors.TensorInfo;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A quantized model as a folder, the quantize pass's output and the export pass's input: a Hugging Face checkpoint
 * whose weights ({@code model.safetensors}, or Hugging Face's shards above 5 GB) are the dequantized (fake-quantized)
 * ones in the source's own type (float32 from float32; bf16 or f16 from a 16-bit checkpoint, as a tool loading it in
 * its {@code torch_dtype} would round them anyway: an 8B model's would be 32 GB in float32), so any tool can evaluate
 * it, plus
 * {@code hexforge_quant.safetensors} with the exact integers, scales and zero points per linear
 * ({@code <module>.q}, {@code .scale} [out, groups], {@code .zero}) and {@code hexforge_quant.json} with the spec.
 */
public final class QuantizedCheckpoint {
    public static final String PARAMS = "hexforge_quant.safetensors";
    public static final String INFO = "hexforge_quant.json";
    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

    private QuantizedCheckpoint() {
    }

    public static boolean isQuantized(Path dir) {
        return Files.isRegularFile(dir.resolve(INFO)) && Files.isRegularFile(dir.resolve(PARAMS));
    }

    static String base(String weightName) {
        return StoredTensors.base(weightName);
    }

    public static void write(Checkpoint ckpt, QuantizedModel qm, String method, Path out) {
        if (!Folders.isMissingOrEmpty(out)) {
            throw new QuantizationException(out + " already exists and is not empty");
        }
        Path tmp = out.resolveSibling(out.getFileName() + ".partial");
        try {
            Folders.deleteTree(tmp);
            Files.createDirectories(tmp);
            Map<String, QuantizedLinear> all = qm.quantized();
            // tensors are read when written, one at a time: the quantized model may be kept in files (StoredTensors)
            OneTensor last = new OneTensor(all);
            List<SafetensorsWriter.Entry> model = new ArrayList<>();
            for (String name : ckpt.store().names()) {
                TensorInfo t = ckpt.store().info(name);
                float[] replaced = qm.replacedFloats().get(name);
                if (all.containsKey(name)) {
                    // dequantized a piece at a time into the writer's buffer: never a float32 copy of a whole tensor
                    model.add(SafetensorsWriter.Entry.ofFloatPieces(name, t.shape(), () -> {
                        QuantizedLinear q = last.get(name);
                        return (from, into, count) -> q.dequantize((int) from, into, count);
                    }, floatType(t)));
                } else if (replaced != null) {
                    // exact: the export reads a method's rewritten floats (AWQ's folded norms) back from here
                    model.add(SafetensorsWriter.Entry.ofFloats(name, t.shape(), replaced, DType.F32));
                } else {
                    model.add(SafetensorsWriter.Entry.copyOf(ckpt.store().file(name), name));
                }
            }
            ShardedWriter.write(tmp, Map.of("format", "pt"), model, ShardedWriter.DEFAULT_SHARD_BYTES);
            List<SafetensorsWriter.Entry> params = new ArrayList<>();
            for (String name : all.keySet()) {
                QuantizedLinear.Shape shape = qm.shape(name);
                params.addAll(StoredTensors.entries(base(name), shape.out(), shape.in(), shape.spec(), () -> last.get(name)));
            }
            SafetensorsWriter.write(tmp.resolve(PARAMS), Map.of("format", "hexforge-quant"), params);
            ObjectNode info = JSON.createObjectNode();
            info.put("formatVersion", 1);
            info.put("method", method);
            info.put("bits", qm.spec().bits());
            info.put("group", qm.spec().groupSize());
            info.put("symmetric", qm.spec().symmetric());
            QuantSpec head = qm.headSpec();
            if (head != null) {
                info.putObject("head").put("bits", head.bits()).put("group", head.groupSize()).put("symmetric", head.symmetric());
            }
            qm.replacedFloats().keySet().forEach(info.putArray("replacedFloats")::add);
            JSON.writeValue(tmp.resolve(INFO).toFile(), info);
            ckpt.copySideFiles(tmp);
            Files.deleteIfExists(out);
            Files.move(tmp, out, StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            Folders.deleteQuietly(tmp);
            throw new UncheckedIOException("writing " + out + ": " + e.getMessage(), e);
        } catch (RuntimeException e) {
            Folders.deleteQuietly(tmp);
            throw e;
        }
    }

    /** The type a dequantized tensor is written in: the source tensor's when it is a 16-bit float, else float32. */
    private static DType floatType(TensorInfo source) {
        return source.dtype() == DType.BF16 || source.dtype() == DType.F16 ? source.dtype() : DType.F32;
    }

    /** The quantized linears (and rewritten floats) of a quantized checkpoint opened as {@code ckpt}. */
    public static QuantizedModel read(Checkpoint ckpt) {
        Path dir = ckpt.dir();
        JsonNode info;
        try {
            info = JSON.readTree(dir.resolve(INFO).toFile());
        } catch (IOException e) {
            throw new QuantizationException(dir.resolve(INFO) + ": unreadable: " + e.getMessage());
        }
        QuantSpec spec = spec(info);
        QuantSpec headSpec = info.has("head") ? spec(info.get("head")) : null;
        Map<String, QuantizedLinear.Shape> linears = new LinkedHashMap<>();
        Map<String, QuantizedLinear.Shape> embeddings = new LinkedHashMap<>();
        Map<String, float[]> replaced = new LinkedHashMap<>();
        Path params = dir.resolve(PARAMS);
        try (SafetensorsFile p = SafetensorsFile.open(params)) {
            for (TensorInfo t : p.tensors()) {
                if (!t.name().endsWith(".q")) {
                    continue;
                }
                String b = t.name().substring(0, t.name().length() - 2);
                String weight = b + ".weight";
                boolean embedding = weight.equals(TensorNames.EMBED) || weight.equals(TensorNames.LM_HEAD);
                QuantSpec s = embedding ? headSpec : spec;
                if (s == null) {
                    throw new QuantizationException(PARAMS + ": " + b + " is quantized but " + INFO + " has no head spec");
                }
                checkLayout(p, b, t, s);
                (embedding ? embeddings : linears).put(weight, new QuantizedLinear.Shape((int) t.dim(0), (int) t.dim(1), s));
            }
        }
        info.path("replacedFloats").forEach(n -> replaced.put(n.asText(), ckpt.floats(n.asText())));
        return new QuantizedModel(ckpt.config(), spec, StoredTensors.of(params, linears), replaced,
                StoredTensors.of(params, embeddings));
    }

    /** The shapes of one tensor's entries against its spec, from the header alone (the values are read when used). */
    private static void checkLayout(SafetensorsFile p, String b, TensorInfo q, QuantSpec s) {
        if (q.shape().length != 2) {
            throw new QuantizationException(PARAMS + ": " + b + ".q must be [out, in], got " + Arrays.toString(q.shape()));
        }
        long out = q.dim(0);
        long groups = s.groups((int) q.dim(1));
        for (String part : s.symmetric() ? List.of(".scale") : List.of(".scale", ".zero")) {
            if (!p.contains(b + part)) {
                throw new QuantizationException(PARAMS + ": " + b + part + " is missing");
            }
            TensorInfo t = p.info(b + part);
            if (t.shape().length != 2 || t.dim(0) != out || t.dim(1) != groups) {
                throw new QuantizationException(PARAMS + ": " + b + part + " has shape " + Arrays.toString(t.shape())
                        + ", the spec needs [" + out + ", " + groups + "]");
            }
        }
    }

    /** The last tensor asked for, kept while its entries are written one after the other. */
    private static final class OneTensor {
        private final Map<String, QuantizedLinear> all;
        private String name;
        private QuantizedLinear value;

        OneTensor(Map<String, QuantizedLinear> all) {
            this.all = all;
        }

        QuantizedLinear get(String n) {
            if (!n.equals(name)) {
                value = all.get(n);
                name = n;
            }
            return value;
        }
    }

    private static QuantSpec spec(JsonNode n) {
        return new QuantSpec(n.path("bits").asInt(), n.path("group").asInt(), n.path("symmetric").asBoolean());
    }
}
