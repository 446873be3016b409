package dev.hexforge.onnx.qnn;

import dev.hexforge.contracts.NpuLimits;
import dev.hexforge.onnx.proto.Onnx.GraphProto;
import dev.hexforge.onnx.proto.Onnx.ModelProto;
import dev.hexforge.onnx.proto.Onnx.NodeProto;
import dev.hexforge.onnx.proto.Onnx.StringStringEntryProto;
import dev.hexforge.onnx.proto.Onnx.TensorProto;
import dev.hexforge.onnx.proto.Onnx.TensorShapeProto;
import dev.hexforge.onnx.proto.Onnx.ValueInfoProto;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * Checks an ONNX graph against what the QNN HTP backend accepts, before any SDK is involved: every operator and
 * whether HTP runs it, every dynamic dimension, every tensor whose element type HTP cannot execute, and the
 * graph's weight bytes against the per-graph NPU memory limit.
 */
public final class QnnPreflight {
    /** The HTP's per-graph weight limit, 2 GiB (the job spec's default {@code export.maxGraphMb}). */
    public static final long GRAPH_WEIGHT_LIMIT_BYTES = (long) NpuLimits.GRAPH_WEIGHT_MB << 20;

    /**
     * @param sixteenBitUses how many of the op's nodes take a 16-bit activation (the output of a DequantizeLinear
     *                       of uint16 / int16 data)
     * @param takes16Bit     whether the HTP has a 16-bit activation form of the op
     */
    public record OpUse(String domain, String opType, int count, boolean supported, int sixteenBitUses, boolean takes16Bit) {
        /** Whether the graph gives this op 16-bit activations the HTP has no form for. */
        public boolean lacks16Bit() {
            return sixteenBitUses > 0 && !takes16Bit;
        }
    }

    /**
     * @param precision        the target the graph was checked for; null: ops, types, shapes and size only
     * @param floatActivations for a target that quantizes activations, the float tensors that flow into compute ops
     *                         without a Q / DQ pair (graph inputs and op outputs; weights are not activations), in
     *                         graph order
     */
    public record Report(String graph, List<OpUse> ops, List<String> dynamicDimensions, List<String> unsupportedTypes,
                         long weightBytes, long weightLimitBytes, Precision precision, List<String> floatActivations) {
        public boolean clean() {
            return ops.stream().allMatch(o -> o.supported() && !o.lacks16Bit()) && dynamicDimensions.isEmpty() && unsupportedTypes.isEmpty()
                    && weightBytes <= weightLimitBytes && floatActivations.isEmpty();
        }

        public List<String> problems() {
            List<String> p = new ArrayList<>();
            ops.stream().filter(o -> !o.supported()).forEach(o -> p.add("op " + (o.domain().isEmpty() ? "" : o.domain() + ".")
                    + o.opType() + " (" + o.count() + "x) is not supported by the HTP backend"));
            ops.stream().filter(o -> o.supported() && o.lacks16Bit()).forEach(o -> p.add("op " + o.opType() + " ("
                    + o.sixteenBitUses() + "x) takes 16-bit activations, which the HTP has no form of the op for: quantize "
                    + "its inputs to 8 bits or replace the op"));
            dynamicDimensions.forEach(d -> p.add("dynamic dimension: " + d));
            unsupportedTypes.forEach(t -> p.add("element type HTP cannot run: " + t));
            if (weightBytes > weightLimitBytes) {
                p.add("weights " + weightBytes + " bytes exceed the per-graph limit of " + weightLimitBytes
                        + " bytes: split the model into parts");
            }
            if (!floatActivations.isEmpty()) {
                p.add("float activations for " + precision.id() + ": " + floatActivations.size() + " tensors flow into compute "
                        + "ops unquantized (first: " + String.join(", ", floatActivations.subList(0, Math.min(5, floatActivations.size())))
                        + "); the HTP runs such a graph in fp16 with 16-bit weights, or fails to load with CPU fallback disabled");
            }
            return p;
        }
    }

    private QnnPreflight() {
    }

    public static Report check(Path model) {
        return check(model, null);
    }

    /** As {@link #check(Path)}, and for a precision that quantizes activations, every float activation. */
    public static Report check(Path model, Precision precision) {
        ModelProto m;
        try (InputStream in = Files.newInputStream(model)) {
            m = ModelProto.parseFrom(in);
        } catch (IOException e) {
            throw new IllegalArgumentException(model + ": not a readable ONNX model: " + e.getMessage(), e);
        }
        if (!m.hasGraph()) {
            throw new IllegalArgumentException(model + ": the file holds no graph (not an ONNX model)");
        }
        return check(model.getFileName().toString(), m.getGraph(), precision);
    }

    static Report check(String name, GraphProto g, Precision precision) {
        Map<String, Integer> types = ElementTypes.of(g);
        Set<String> sixteenBit = ElementTypes.sixteenBitActivations(g, types);
        Map<String, OpUse> ops = new TreeMap<>();
        for (NodeProto n : g.getNodeList()) {
            String key = n.getDomain() + "::" + n.getOpType();
            OpUse prev = ops.get(key);
            boolean uses16 = !QDQ.contains(n.getOpType()) && n.getInputList().stream().anyMatch(sixteenBit::contains);
            ops.put(key, new OpUse(n.getDomain(), n.getOpType(), prev == null ? 1 : prev.count() + 1,
                    HtpOpSupport.isSupported(n.getDomain(), n.getOpType()),
                    (prev == null ? 0 : prev.sixteenBitUses()) + (uses16 ? 1 : 0),
                    HtpOpSupport.takes16BitActivations(n.getDomain(), n.getOpType())));
        }
        List<String> dynamic = new ArrayList<>();
        List<String> badTypes = new ArrayList<>();
        checkValues("input", g.getInputList(), dynamic, badTypes);
        checkValues("output", g.getOutputList(), dynamic, badTypes);
        checkValues("value", g.getValueInfoList(), dynamic, badTypes);

        Map<String, List<String>> consumers = new HashMap<>();
        for (NodeProto n : g.getNodeList()) {
            for (int i = 0; i < n.getInputCount(); i++) {
                boolean parameter = HtpOpSupport.PARAMETER_INPUTS.getOrDefault(n.getOpType(), Set.of()).contains(i);
                if (!parameter) {
                    consumers.computeIfAbsent(n.getInput(i), k -> new ArrayList<>()).add(n.getName());
                }
            }
        }
        long weightBytes = 0;
        for (TensorProto t : g.getInitializerList()) {
            weightBytes += bytesOf(t);
            if (!HtpOpSupport.typeRuns(t.getDataType()) && consumers.containsKey(t.getName())) {
                badTypes.add("initializer " + t.getName() + " is " + typeName(t.getDataType()) + " (used as data by "
                        + consumers.get(t.getName()).get(0) + ")");
            }
        }
        List<String> floats = precision != null && precision.quantizesActivations() ? ElementTypes.floatActivations(g, types) : List.of();
        return new Report(name, List.copyOf(ops.values()), dynamic, badTypes, weightBytes, GRAPH_WEIGHT_LIMIT_BYTES, precision, floats);
    }

    private static final Set<String> QDQ = Set.of("QuantizeLinear", "DequantizeLinear");

    private static void checkValues(String kind, List<ValueInfoProto> values, List<String> dynamic, List<String> badTypes) {
        for (ValueInfoProto v : values) {
            if (!v.getType().hasTensorType()) {
                continue;
            }
            var tt = v.getType().getTensorType();
            if (!tt.hasShape()) {
                dynamic.add(kind + " " + v.getName() + " has no shape");
            } else {
                List<TensorShapeProto.Dimension> dims = tt.getShape().getDimList();
                for (int i = 0; i < dims.size(); i++) {
                    if (!dims.get(i).hasDimValue()) {
                        dynamic.add(kind + " " + v.getName() + " dim " + i
                                + (dims.get(i).hasDimParam() ? " '" + dims.get(i).getDimParam() + "'" : " (unknown)"));
                    }
                }
            }
            if (!HtpOpSupport.typeRuns(tt.getElemType())) {
                badTypes.add(kind + " " + v.getName() + " is " + typeName(tt.getElemType()));
            }
        }
    }

    private static long bytesOf(TensorProto t) {
        if (t.getDataLocation() == TensorProto.DataLocation.EXTERNAL) {
            for (StringStringEntryProto e : t.getExternalDataList()) {
                if (e.getKey().equals("length")) {
                    return Long.parseLong(e.getValue());
                }
            }
        }
        return t.getRawData().size() + 4L * t.getFloatDataCount() + 8L * t.getInt64DataCount() + 4L * t.getInt32DataCount();
    }

    static String typeName(int elemType) {
        TensorProto.DataType t = TensorProto.DataType.forNumber(elemType);
        return t == null ? "type " + elemType : t.name().toLowerCase();
    }
}
