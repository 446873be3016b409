package dev.hexforge.onnx.qnn;

import dev.hexforge.onnx.proto.Onnx.AttributeProto;
import dev.hexforge.onnx.proto.Onnx.GraphProto;
import dev.hexforge.onnx.proto.Onnx.NodeProto;
import dev.hexforge.onnx.proto.Onnx.TensorProto;
import dev.hexforge.onnx.proto.Onnx.TensorProto.DataType;
import dev.hexforge.onnx.proto.Onnx.ValueInfoProto;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The element type of every tensor of a graph, carried forward from its inputs and initializers through the ops
 * (a DequantizeLinear gives float, a QuantizeLinear its zero point's type, a Cast its target, comparisons bool, Shape
 * and Range int64, the rest their first data input's type); and from them, the float activations a fully quantized
 * graph must not have.
 */
public final class ElementTypes {
    private static final Set<Integer> FLOATS = Set.of(DataType.FLOAT.getNumber(), DataType.FLOAT16.getNumber(),
            DataType.BFLOAT16.getNumber(), DataType.DOUBLE.getNumber());
    private static final Set<String> BOOLEAN_OPS = Set.of("Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual", "And",
            "Or", "Not", "Xor", "IsNaN", "IsInf");
    /** Ops that read only their input's shape, or quantize it: a float input there is no float activation. */
    private static final Set<String> NOT_COMPUTE = Set.of("QuantizeLinear", "Shape", "Size");

    private ElementTypes() {
    }

    /** The element type of each tensor the graph names, where it can be told. */
    public static Map<String, Integer> of(GraphProto g) {
        Map<String, Integer> types = new HashMap<>();
        for (ValueInfoProto v : g.getInputList()) {
            if (v.getType().hasTensorType()) {
                types.put(v.getName(), v.getType().getTensorType().getElemType());
            }
        }
        for (TensorProto t : g.getInitializerList()) {
            types.put(t.getName(), t.getDataType());
        }
        for (NodeProto n : g.getNodeList()) {
            Integer out = switch (n.getOpType()) {
                case "DequantizeLinear" -> DataType.FLOAT.getNumber();
                case "QuantizeLinear" -> n.getInputCount() > 2 && types.containsKey(n.getInput(2)) ? types.get(n.getInput(2))
                        : DataType.UINT8.getNumber();
                case "Cast" -> (int) attribute(n, "to");
                case "Shape", "Size", "Range", "ArgMax", "ArgMin", "NonZero" -> n.getOpType().equals("Range") && n.getInputCount() > 0
                        ? types.get(n.getInput(0)) : DataType.INT64.getNumber();
                case "Where" -> n.getInputCount() > 1 ? types.get(n.getInput(1)) : null;
                case "Constant" -> constantType(n);
                default -> BOOLEAN_OPS.contains(n.getOpType()) ? DataType.BOOL.getNumber()
                        : n.getInputCount() > 0 ? types.get(n.getInput(0)) : null;
            };
            for (String o : n.getOutputList()) {
                if (out != null && !o.isEmpty()) {
                    types.put(o, out);
                }
            }
        }
        return types;
    }

    /**
     * Float tensors that compute ops read as data without a Q / DQ pair, in graph order: graph inputs and op outputs
     * that are not a DequantizeLinear's (weights, the initializers, are not activations; shape, axes and index
     * parameters are not data).
     */
    static List<String> floatActivations(GraphProto g, Map<String, Integer> types) {
        Set<String> initializers = new HashSet<>();
        g.getInitializerList().forEach(t -> initializers.add(t.getName()));
        Set<String> dequantized = new HashSet<>();
        for (NodeProto n : g.getNodeList()) {
            if (n.getOpType().equals("DequantizeLinear")) {
                dequantized.addAll(n.getOutputList());
            }
        }
        Set<String> found = new LinkedHashSet<>();
        for (NodeProto n : g.getNodeList()) {
            if (NOT_COMPUTE.contains(n.getOpType()) || n.getOpType().equals("DequantizeLinear")) {
                continue;
            }
            Set<Integer> parameters = HtpOpSupport.PARAMETER_INPUTS.getOrDefault(n.getOpType(), Set.of());
            for (int i = 0; i < n.getInputCount(); i++) {
                String in = n.getInput(i);
                if (in.isEmpty() || parameters.contains(i) || initializers.contains(in) || dequantized.contains(in)) {
                    continue;
                }
                Integer t = types.get(in);
                if (t != null && FLOATS.contains(t)) {
                    found.add(in);
                }
            }
        }
        return new ArrayList<>(found);
    }

    /** The outputs of every DequantizeLinear of 16-bit data: the values ops receive as 16-bit activations. */
    static Set<String> sixteenBitActivations(GraphProto g, Map<String, Integer> types) {
        Set<String> out = new HashSet<>();
        for (NodeProto n : g.getNodeList()) {
            Integer t = n.getOpType().equals("DequantizeLinear") ? types.get(n.getInput(0)) : null;
            if (t != null && (t == DataType.UINT16.getNumber() || t == DataType.INT16.getNumber())) {
                out.addAll(n.getOutputList());
            }
        }
        return out;
    }

    private static long attribute(NodeProto n, String name) {
        for (AttributeProto a : n.getAttributeList()) {
            if (a.getName().equals(name)) {
                return a.getI();
            }
        }
        return DataType.UNDEFINED.getNumber();
    }

    private static Integer constantType(NodeProto n) {
        for (AttributeProto a : n.getAttributeList()) {
            if (a.getName().equals("value") && a.hasT()) {
                return a.getT().getDataType();
            }
        }
        return null;
    }
}
