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
import dev.hexforge.safetensors.TensorInfo;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A quantized model as a folder, the quantize pass's output and the export pass's input: a Hugging Face checkpoint
 * whose {@code model.safetensors} holds the dequantized (fake-quantized) weights, so any tool can evaluate it, plus
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
        return weightName.substring(0, weightName.length() - ".weight".length());
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
            List<SafetensorsWriter.Entry> model = new ArrayList<>();
            for (String name : ckpt.store().names()) {
                TensorInfo t = ckpt.store().info(name);
                QuantizedLinear q = all.get(name);
                float[] replaced = qm.replacedFloats().get(name);
                if (q != null) {
                    model.add(SafetensorsWriter.Entry.ofFloats(name, t.shape(), q::dequantize, DType.F32));
                } else if (replaced != null) {
                    model.add(SafetensorsWriter.Entry.ofFloats(name, t.shape(), replaced, DType.F32));
                } else {
                    model.add(SafetensorsWriter.Entry.ofBytes(name, t.dtype(), t.shape(), ckpt.store().bytes(name)));
                }
            }
            SafetensorsWriter.write(tmp.resolve("model.safetensors"), Map.of("format", "pt"), model);
            List<SafetensorsWriter.Entry> params = new ArrayList<>();
            for (var e : all.entrySet()) {
                QuantizedLinear q = e.getValue();
                String b = base(e.getKey());
                params.add(SafetensorsWriter.Entry.ofBytes(b + ".q", q.spec().symmetric() ? DType.I8 : DType.U8,
                        new long[]{q.out(), q.in()}, ByteBuffer.wrap(q.q())));
                params.add(SafetensorsWriter.Entry.ofFloats(b + ".scale", new long[]{q.out(), q.groups()}, q.scales(), DType.F32));
                if (q.zeros() != null) {
                    params.add(SafetensorsWriter.Entry.ofBytes(b + ".zero", DType.U8, new long[]{q.out(), q.groups()}, ByteBuffer.wrap(q.zeros())));
                }
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
        Map<String, QuantizedLinear> linears = new LinkedHashMap<>();
        Map<String, QuantizedLinear> embeddings = new LinkedHashMap<>();
        Map<String, float[]> replaced = new LinkedHashMap<>();
        try (SafetensorsFile p = SafetensorsFile.open(dir.resolve(PARAMS))) {
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
                int out = (int) t.dim(0);
                int in = (int) t.dim(1);
                if (s.groups(in) != p.info(b + ".scale").dim(1)) {
                    throw new QuantizationException(PARAMS + ": " + b + ".scale has " + p.info(b + ".scale").dim(1)
                            + " groups, the spec needs " + s.groups(in));
                }
                byte[] q = new byte[out * in];
                p.bytes(t.name()).get(q);
                byte[] zeros = null;
                if (!s.symmetric()) {
                    zeros = new byte[(int) p.info(b + ".zero").numel()];
                    p.bytes(b + ".zero").get(zeros);
                }
                (embedding ? embeddings : linears).put(weight, new QuantizedLinear(out, in, s, q, p.floats(b + ".scale"), zeros));
            }
        }
        info.path("replacedFloats").forEach(n -> replaced.put(n.asText(), ckpt.floats(n.asText())));
        return new QuantizedModel(ckpt.config(), spec, linears, replaced, embeddings);
    }

    private static QuantSpec spec(JsonNode n) {
        return new QuantSpec(n.path("bits").asInt(), n.path("group").asInt(), n.path("symmetric").asBoolean());
    }
}
