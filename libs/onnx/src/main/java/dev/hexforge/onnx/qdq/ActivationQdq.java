package dev.hexforge.onnx.qdq;

import com.google.protobuf.ByteString;
import dev.hexforge.onnx.proto.Onnx.AttributeProto;
import dev.hexforge.onnx.proto.Onnx.GraphProto;
import dev.hexforge.onnx.proto.Onnx.ModelProto;
import dev.hexforge.onnx.proto.Onnx.NodeProto;
import dev.hexforge.onnx.proto.Onnx.OperatorSetIdProto;
import dev.hexforge.onnx.proto.Onnx.TensorProto;
import dev.hexforge.onnx.proto.Onnx.TensorProto.DataType;
import dev.hexforge.onnx.proto.Onnx.TypeProto;
import dev.hexforge.onnx.proto.Onnx.ValueInfoProto;
import dev.hexforge.onnx.qnn.ElementTypes;
import dev.hexforge.onnx.qnn.HtpOpSupport;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;

/**
 * Rewrites a graph whose weights are already quantized (DequantizeLinear on every weight) into the full QDQ form ONNX
 * Runtime's QNN provider runs on the HTP: a QuantizeLinear / DequantizeLinear pair on every float activation (graph
 * inputs, every op's output, the graph outputs), and every float constant an op reads quantized too:
 * <ul>
 *   <li>a Gemm's bias as int32 per output channel, scale = the input's scale × the weight's (the largest of a
 *       column's block scales for blocked weights);</li>
 *   <li>a single value exactly, at 8 bits (scale = |value|);</li>
 *   <li>any other (norm weights, the RoPE tables) at 16 bits over its range.</li>
 * </ul>
 * Ops that only move values (Reshape, Transpose, Slice, Gather...) keep their data input's encoding, unless their
 * output is a graph output with its own (a KV cache entry). Every other activation must have an encoding; one missing
 * is an error naming it. Graph inputs and outputs stay float: the values they carry are what the encodings represent.
 * Opset 21 (16-bit QuantizeLinear in the default domain).
 */
public final class ActivationQdq {
    static final Set<String> SAME_ENCODING = Set.of("Reshape", "Transpose", "Slice", "Unsqueeze", "Squeeze", "Gather",
            "Flatten", "Expand", "Identity");
    /** Constants larger than this are weights that should have been quantized (a kept linear, a float head). */
    public static final long MAX_CONSTANT_ELEMENTS = 1L << 22;
    public static final int OPSET = 21;

    private ActivationQdq() {
    }

    /** The float activations of a graph in order: float graph inputs, then the float outputs of every op but DequantizeLinear. */
    public static List<String> activations(GraphProto g) {
        Map<String, Integer> types = ElementTypes.of(g);
        Set<String> found = new LinkedHashSet<>();
        for (ValueInfoProto v : g.getInputList()) {
            if (isFloat(types.get(v.getName()))) {
                found.add(v.getName());
            }
        }
        for (NodeProto n : g.getNodeList()) {
            if (n.getOpType().equals("DequantizeLinear")) {
                continue;
            }
            for (String o : n.getOutputList()) {
                if (!o.isEmpty() && isFloat(types.get(o))) {
                    found.add(o);
                }
            }
        }
        return new ArrayList<>(found);
    }

    /** The model with {@code names} added to its outputs (float, shape left to the runtime), for calibration runs. */
    public static ModelProto withOutputs(ModelProto m, Collection<String> names) {
        GraphProto.Builder g = m.getGraph().toBuilder();
        Set<String> outputs = new HashSet<>();
        g.getOutputList().forEach(o -> outputs.add(o.getName()));
        for (String n : names) {
            if (outputs.add(n)) {
                g.addOutput(ValueInfoProto.newBuilder().setName(n).setType(TypeProto.newBuilder()
                        .setTensorType(TypeProto.Tensor.newBuilder().setElemType(DataType.FLOAT.getNumber()))));
            }
        }
        return m.toBuilder().setGraph(g).build();
    }

    /**
     * The model in full QDQ form.
     *
     * @param encodings      every activation's encoding by tensor name (data-moving ops' outputs may be absent)
     * @param externalFloats the values of a float initializer stored as external data, by name
     * @throws MissingEncodingException when an activation has no encoding
     */
    public static ModelProto apply(ModelProto m, Map<String, Encoding> encodings, Function<String, float[]> externalFloats) {
        return new Rewrite(m.getGraph(), encodings, externalFloats).model(m);
    }

    /** An activation of the graph that the encodings do not cover. */
    public static final class MissingEncodingException extends IllegalArgumentException {
        public MissingEncodingException(String message) {
            super(message);
        }
    }

    private static boolean isFloat(Integer t) {
        return t != null && t == DataType.FLOAT.getNumber();
    }

    private static final class Rewrite {
        private final GraphProto g;
        private final Map<String, Encoding> given;
        private final Function<String, float[]> externalFloats;
        private final Map<String, Integer> types;
        private final Map<String, TensorProto> initializers = new HashMap<>();
        private final Map<String, NodeProto> producers = new HashMap<>();
        private final Set<String> graphOutputs = new HashSet<>();
        /** Each activation's or constant's encoding, by its original name. */
        private final Map<String, Encoding> chosen = new HashMap<>();
        /** Original value name → the name consumers read (a DequantizeLinear's output). */
        private final Map<String, String> readAs = new HashMap<>();
        private final List<NodeProto> nodes = new ArrayList<>();
        private final List<TensorProto> added = new ArrayList<>();

        Rewrite(GraphProto g, Map<String, Encoding> given, Function<String, float[]> externalFloats) {
            this.g = g;
            this.given = given;
            this.externalFloats = externalFloats;
            this.types = ElementTypes.of(g);
            g.getInitializerList().forEach(t -> initializers.put(t.getName(), t));
            g.getOutputList().forEach(o -> graphOutputs.add(o.getName()));
            for (NodeProto n : g.getNodeList()) {
                n.getOutputList().forEach(o -> producers.put(o, n));
            }
        }

        ModelProto model(ModelProto m) {
            List<String> missing = new ArrayList<>();
            for (ValueInfoProto v : g.getInputList()) {
                if (isFloat(types.get(v.getName())) && !initializers.containsKey(v.getName())) {
                    Encoding e = given.get(v.getName());
                    if (e == null) {
                        missing.add(v.getName());
                        continue;
                    }
                    chosen.put(v.getName(), e);
                    readAs.put(v.getName(), qdq(v.getName(), v.getName() + "/dq", e));
                }
            }
            for (NodeProto n : g.getNodeList()) {
                rewrite(n, missing);
            }
            if (!missing.isEmpty()) {
                throw new MissingEncodingException(missing.size() + " activations have no encoding (first: "
                        + String.join(", ", missing.subList(0, Math.min(5, missing.size())))
                        + "); the calibration did not cover this graph");
            }
            GraphProto.Builder out = g.toBuilder().clearNode().addAllNode(nodes).addAllInitializer(added);
            // the float constants now read through their quantized copies are dropped
            Set<String> read = new HashSet<>();
            nodes.forEach(n -> read.addAll(n.getInputList()));
            List<TensorProto> kept = out.getInitializerList().stream().filter(t -> read.contains(t.getName())).toList();
            out.clearInitializer().addAllInitializer(kept);
            ModelProto.Builder mb = m.toBuilder().setGraph(out).setIrVersion(Math.max(m.getIrVersion(), 10));
            for (int i = 0; i < mb.getOpsetImportCount(); i++) {
                OperatorSetIdProto o = mb.getOpsetImport(i);
                if (o.getDomain().isEmpty() || o.getDomain().equals("ai.onnx")) {
                    mb.setOpsetImport(i, o.toBuilder().setVersion(Math.max(o.getVersion(), OPSET)));
                }
            }
            return mb.build();
        }

        private void rewrite(NodeProto n, List<String> missing) {
            NodeProto.Builder b = n.toBuilder();
            boolean quantOp = n.getOpType().equals("DequantizeLinear") || n.getOpType().equals("QuantizeLinear");
            Set<Integer> parameters = HtpOpSupport.PARAMETER_INPUTS.getOrDefault(n.getOpType(), Set.of());
            for (int i = 0; i < n.getInputCount(); i++) {
                String in = n.getInput(i);
                if (in.isEmpty() || quantOp) {
                    continue;
                }
                if (readAs.containsKey(in)) {
                    b.setInput(i, readAs.get(in));
                } else if (initializers.containsKey(in) && isFloat(initializers.get(in).getDataType()) && !parameters.contains(i)) {
                    b.setInput(i, constant(n, i));
                }
            }
            List<Pair> pairs = new ArrayList<>();
            if (!n.getOpType().equals("DequantizeLinear")) {
                for (int o = 0; o < n.getOutputCount(); o++) {
                    String name = n.getOutput(o);
                    if (name.isEmpty() || !isFloat(types.get(name))) {
                        continue;
                    }
                    Encoding e = encodingOf(n, name);
                    if (e == null) {
                        missing.add(name);
                        continue;
                    }
                    chosen.put(name, e);
                    if (graphOutputs.contains(name)) {
                        // the graph output keeps its name: the op writes a float value quantized into it
                        b.setOutput(o, name + "/float");
                        pairs.add(new Pair(name + "/float", name, e));
                    } else {
                        pairs.add(new Pair(name, name + "/dq", e));
                        readAs.put(name, name + "/dq");
                    }
                }
            }
            nodes.add(b.build());
            for (Pair p : pairs) {
                qdq(p.value(), p.out(), p.encoding());
            }
        }

        private record Pair(String value, String out, Encoding encoding) {
        }

        private Encoding encodingOf(NodeProto n, String output) {
            if (SAME_ENCODING.contains(n.getOpType()) && !graphOutputs.contains(output) && chosen.containsKey(n.getInput(0))) {
                return chosen.get(n.getInput(0));
            }
            if (n.getOpType().equals("Concat") && !graphOutputs.contains(output)) {
                Encoding first = chosen.get(n.getInput(0));
                boolean same = first != null && n.getInputList().stream().allMatch(i -> first.equals(chosen.get(i)));
                if (same) {
                    return first;
                }
            }
            return given.get(output);
        }

        /** QuantizeLinear(value) then DequantizeLinear into {@code out}; returns {@code out}. */
        private String qdq(String value, String out, Encoding e) {
            String scale = scalar(out + "/scale", e);
            String zero = zeroPoint(out + "/zero_point", e);
            nodes.add(NodeProto.newBuilder().setName(out + "/QuantizeLinear").setOpType("QuantizeLinear")
                    .addInput(value).addInput(scale).addInput(zero).addOutput(out + "/q").build());
            nodes.add(NodeProto.newBuilder().setName(out + "/DequantizeLinear").setOpType("DequantizeLinear")
                    .addInput(out + "/q").addInput(scale).addInput(zero).addOutput(out).build());
            return out;
        }

        private String scalar(String name, Encoding e) {
            added.add(e.scaleTensor(name));
            return name;
        }

        private String zeroPoint(String name, Encoding e) {
            added.add(e.zeroPointTensor(name));
            return name;
        }

        /** The quantized copy of the float constant input {@code i} of {@code n}, read through a DequantizeLinear. */
        private String constant(NodeProto n, int i) {
            String name = n.getInput(i);
            TensorProto t = initializers.get(name);
            if (n.getOpType().equals("Gemm") && i == 2) {
                return bias(n, name + "/" + n.getName(), floats(t));
            }
            if (readAs.containsKey(name)) {
                return readAs.get(name);
            }
            String out = name + "/dq";
            float[] v = floats(t);
            if (v.length > MAX_CONSTANT_ELEMENTS) {
                throw new IllegalArgumentException("the float weight " + name + " (" + v.length + " values) cannot run beside "
                        + "quantized activations: quantize it (no --keep for it, an int8 or int4 head) or keep activations float");
            }
            String q = out + "/q";
            String scale;
            String zero;
            if (v.length == 1) {
                // a single value exactly: q 1 (or 0 with zero point 1) at scale |value|
                float x = v[0];
                float s = x == 0 ? 1f : Math.abs(x);
                int zp = x < 0 ? 1 : 0;
                int qv = x > 0 ? 1 : 0;
                Encoding e = new Encoding(8, s, zp);
                added.add(tensor(q, DataType.UINT8, dims(t), new byte[]{(byte) qv}));
                scale = scalar(out + "/scale", e);
                zero = zeroPoint(out + "/zero_point", e);
                chosen.put(name, e);
            } else {
                float min = Float.POSITIVE_INFINITY;
                float max = Float.NEGATIVE_INFINITY;
                for (float x : v) {
                    min = Math.min(min, x);
                    max = Math.max(max, x);
                }
                Encoding e = Encoding.ofRange(min, max, 16);
                ByteBuffer raw = ByteBuffer.allocate(v.length * 2).order(ByteOrder.LITTLE_ENDIAN);
                for (float x : v) {
                    raw.putShort((short) e.quantize(x));
                }
                added.add(tensor(q, DataType.UINT16, dims(t), raw.array()));
                scale = scalar(out + "/scale", e);
                zero = zeroPoint(out + "/zero_point", e);
                chosen.put(name, e);
            }
            nodes.add(NodeProto.newBuilder().setName(out + "/DequantizeLinear").setOpType("DequantizeLinear")
                    .addInput(q).addInput(scale).addInput(zero).addOutput(out).build());
            readAs.put(name, out);
            return out;
        }

        /** A Gemm's bias as int32 per output channel at scale = input scale × weight scale. */
        private String bias(NodeProto gemm, String out, float[] b) {
            Encoding x = chosen.get(gemm.getInput(0));
            float[] w = weightScales(gemm.getInput(1), b.length);
            if (x == null || w == null) {
                throw new IllegalArgumentException(gemm.getName() + ": a bias needs a quantized input and weight");
            }
            ByteBuffer scales = ByteBuffer.allocate(b.length * 4).order(ByteOrder.LITTLE_ENDIAN);
            ByteBuffer values = ByteBuffer.allocate(b.length * 4).order(ByteOrder.LITTLE_ENDIAN);
            for (int o = 0; o < b.length; o++) {
                double s = (double) x.scale() * w[o];
                if (Math.abs(b[o]) / s > Integer.MAX_VALUE / 2.0) {
                    s = Math.abs(b[o]) / (Integer.MAX_VALUE / 2.0);
                }
                scales.putFloat((float) s);
                values.putInt((int) Math.round(b[o] / (double) (float) s));
            }
            added.add(tensor(out + "/q", DataType.INT32, new long[]{b.length}, values.array()));
            added.add(tensor(out + "/scale", DataType.FLOAT, new long[]{b.length}, scales.array()));
            nodes.add(NodeProto.newBuilder().setName(out + "/DequantizeLinear").setOpType("DequantizeLinear")
                    .addInput(out + "/q").addInput(out + "/scale").addOutput(out + "/dq")
                    .addAttribute(AttributeProto.newBuilder().setName("axis").setType(AttributeProto.AttributeType.INT).setI(0))
                    .build());
            return out + "/dq";
        }

        /** Per output column, the scale of the weight a DequantizeLinear makes ([in, out]; blocks: the column's largest). */
        private float[] weightScales(String weight, int columns) {
            NodeProto dq = producers.get(weight);
            if (dq == null || !dq.getOpType().equals("DequantizeLinear")) {
                return null;
            }
            float[] s = floats(initializers.get(dq.getInput(1)));
            float[] perColumn = new float[columns];
            for (int i = 0; i < s.length; i++) {
                perColumn[i % columns] = Math.max(perColumn[i % columns], s[i]);
            }
            return perColumn;
        }

        private float[] floats(TensorProto t) {
            if (t.getDataLocation() == TensorProto.DataLocation.EXTERNAL) {
                return externalFloats.apply(t.getName());
            }
            if (t.getFloatDataCount() > 0) {
                float[] v = new float[t.getFloatDataCount()];
                for (int i = 0; i < v.length; i++) {
                    v[i] = t.getFloatData(i);
                }
                return v;
            }
            ByteBuffer b = t.getRawData().asReadOnlyByteBuffer().order(ByteOrder.LITTLE_ENDIAN);
            float[] v = new float[b.remaining() / 4];
            b.asFloatBuffer().get(v);
            return v;
        }

        private static long[] dims(TensorProto t) {
            return t.getDimsList().stream().mapToLong(Long::longValue).toArray();
        }

        private static TensorProto tensor(String name, DataType type, long[] dims, byte[] raw) {
            TensorProto.Builder t = TensorProto.newBuilder().setName(name).setDataType(type.getNumber()).setRawData(ByteString.copyFrom(raw));
            for (long d : dims) {
                t.addDims(d);
            }
            return t.build();
        }
    }
}
