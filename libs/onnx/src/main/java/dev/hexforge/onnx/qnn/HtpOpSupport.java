package dev.hexforge.onnx.qnn;

import dev.hexforge.onnx.proto.Onnx.TensorProto.DataType;

import java.util.Map;
import java.util.Set;

/**
 * What the QNN HTP backend runs through ONNX Runtime's QNN execution provider: the ai.onnx operators it maps to
 * HTP ops, the element types HTP executes, and which op inputs are compile-time parameters (an int64 shape or
 * axes tensor there is folded by the converter and never reaches the NPU).
 */
public final class HtpOpSupport {
    private HtpOpSupport() {
    }

    static final Set<String> OPS = Set.of(
            "Abs", "Add", "And", "ArgMax", "ArgMin", "Asin", "Atan", "AveragePool", "BatchNormalization", "Cast", "Ceil",
            "Clip", "Concat", "Conv", "ConvTranspose", "Cos", "CumSum", "DepthToSpace", "DequantizeLinear", "Div", "Einsum",
            "Elu", "Equal", "Erf", "Exp", "Expand", "Flatten", "Floor", "Gather", "GatherElements", "GatherND", "Gelu", "Gemm",
            "GlobalAveragePool", "GlobalMaxPool", "Greater", "GreaterOrEqual", "GridSample", "HardSigmoid", "HardSwish",
            "Identity", "InstanceNormalization", "LayerNormalization", "LeakyRelu", "Less", "LessOrEqual", "Log",
            "LogSoftmax", "LpNormalization", "LRN", "MatMul", "Max", "MaxPool", "Mean", "Min", "Mul", "Neg", "Not", "Or",
            "Pad", "Pow", "PRelu", "QuantizeLinear", "Reciprocal", "ReduceL2", "ReduceMax", "ReduceMean", "ReduceMin",
            "ReduceProd", "ReduceSum", "Relu", "Reshape", "Resize", "Round", "ScatterND", "Sigmoid", "Sign", "Sin", "Slice",
            "Softmax", "SpaceToDepth", "Split", "Sqrt", "Squeeze", "Sub", "Sum", "Tanh", "Tile", "TopK", "Transpose",
            "Unsqueeze", "Where");

    /**
     * The operators whose HTP implementation has a 16-bit activation configuration (QNN's {@code INT16}: uint16
     * fixed point in and out), as QAIRT 2.39's HTP op definition supplement and HTP op-support history list them and
     * as ONNX Runtime's QNN provider tests them on HTP with uint16 Q / DQ: the element-wise binary ops (Add, Sub, Mul,
     * Div, Pow, Min, Max, Where), the unary ops and neurons with a 16-bit form, Softmax, MatMul, Gemm and Conv (a16w8 /
     * a16w4), the reductions, and the data movers, which carry their input's encoding. An op left out (Cos, Sin, Exp:
     * 8-bit forms only; the pools and the rest: not documented at 16 bits) is not assumed to take them.
     */
    static final Set<String> INT16_ACTIVATIONS = Set.of(
            "Abs", "Add", "ArgMax", "ArgMin", "Atan", "Ceil", "Concat", "Conv", "DepthToSpace", "Div", "Expand", "Flatten",
            "Gather", "Gelu", "Gemm", "GridSample", "HardSwish", "Identity", "Log", "MatMul", "Max", "Min", "Mul", "Neg",
            "Pow", "ReduceMax", "ReduceMean", "ReduceMin", "ReduceSum", "Reshape", "Sigmoid", "Sign", "Slice", "Softmax",
            "SpaceToDepth", "Split", "Sqrt", "Squeeze", "Sub", "Tanh", "Transpose", "Unsqueeze", "Where");

    static final Set<Integer> TYPES = Set.of(DataType.FLOAT.getNumber(), DataType.FLOAT16.getNumber(),
            DataType.INT32.getNumber(), DataType.UINT32.getNumber(), DataType.INT8.getNumber(), DataType.UINT8.getNumber(),
            DataType.INT16.getNumber(), DataType.UINT16.getNumber(), DataType.BOOL.getNumber(), DataType.INT4.getNumber(),
            DataType.UINT4.getNumber(), DataType.BFLOAT16.getNumber());

    /** Inputs (by op) that are shape / axes / index parameters resolved at compile time. */
    public static final Map<String, Set<Integer>> PARAMETER_INPUTS = Map.ofEntries(
            Map.entry("Reshape", Set.of(1)), Map.entry("Slice", Set.of(1, 2, 3, 4)), Map.entry("Unsqueeze", Set.of(1)),
            Map.entry("Squeeze", Set.of(1)), Map.entry("Expand", Set.of(1)), Map.entry("Tile", Set.of(1)),
            Map.entry("Split", Set.of(1)), Map.entry("ReduceMean", Set.of(1)), Map.entry("ReduceSum", Set.of(1)),
            Map.entry("ReduceMax", Set.of(1)), Map.entry("ReduceMin", Set.of(1)), Map.entry("ReduceProd", Set.of(1)),
            Map.entry("ReduceL2", Set.of(1)), Map.entry("Pad", Set.of(1, 3)), Map.entry("TopK", Set.of(1)),
            Map.entry("Resize", Set.of(1, 2, 3)), Map.entry("CumSum", Set.of(1)), Map.entry("Gather", Set.of(1)));

    public static boolean isSupported(String domain, String op) {
        return (domain.isEmpty() || domain.equals("ai.onnx")) && OPS.contains(op);
    }

    /** Whether the HTP runs {@code op} with 16-bit activations (see {@link #INT16_ACTIVATIONS}). */
    public static boolean takes16BitActivations(String domain, String op) {
        return isSupported(domain, op) && INT16_ACTIVATIONS.contains(op);
    }

    public static boolean typeRuns(int elemType) {
        return TYPES.contains(elemType);
    }
}
