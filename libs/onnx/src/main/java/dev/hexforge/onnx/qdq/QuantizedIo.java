package dev.hexforge.onnx.qdq;

import dev.hexforge.onnx.proto.Onnx.GraphProto;
import dev.hexforge.onnx.proto.Onnx.ModelProto;
import dev.hexforge.onnx.proto.Onnx.NodeProto;
import dev.hexforge.onnx.proto.Onnx.TensorProto;
import dev.hexforge.onnx.proto.Onnx.TensorProto.DataType;
import dev.hexforge.onnx.proto.Onnx.ValueInfoProto;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A fully quantized graph's inputs and outputs in their quantized types (AI Hub's {@code --quantize_io}): the
 * attention mask, cache entries, hidden states between parts and the logits cross the graph's boundary as uint16 /
 * uint8 values at their activation encodings instead of float32, so an application on the phone keeps the KV cache in
 * 8 bits and no float conversion runs outside the NPU. {@link #apply} drops the QuantizeLinear behind each float input
 * and the DequantizeLinear in front of each float output of a graph in {@link ActivationQdq}'s form; integer inputs
 * (token ids, positions) are unchanged. {@link #encodings} names each quantized input's and output's encoding, read
 * from the graph itself. {@link #floatBoundary} is the inverse, for a runtime that can only feed float tensors (ONNX
 * Runtime's Java API has no uint16 tensor): it computes exactly what the quantized-IO graph computes when its caller
 * quantizes with the same encodings.
 */
public final class QuantizedIo {
    private QuantizedIo() {
    }

    /** One boundary value and its encoding. */
    public record Boundary(String name, boolean input, Encoding encoding) {
        public DataType type() {
            return encoding.type();
        }

        public float scale() {
            return encoding.scale();
        }

        public int zeroPoint() {
            return encoding.zeroPoint();
        }
    }

    /** Each value's readers and writer, and the initializers by name. */
    private record Index(Map<String, List<NodeProto>> consumers, Map<String, NodeProto> producers,
                         Map<String, TensorProto> initializers) {
        static Index of(GraphProto g) {
            Map<String, List<NodeProto>> consumers = new HashMap<>();
            Map<String, NodeProto> producers = new HashMap<>();
            for (NodeProto n : g.getNodeList()) {
                n.getInputList().forEach(in -> consumers.computeIfAbsent(in, k -> new ArrayList<>()).add(n));
                n.getOutputList().forEach(o -> producers.put(o, n));
            }
            Map<String, TensorProto> initializers = new HashMap<>();
            g.getInitializerList().forEach(t -> initializers.put(t.getName(), t));
            return new Index(consumers, producers, initializers);
        }

        /** The encoding a Q / DQ node applies: its constant scale and zero point. */
        Encoding encoding(NodeProto qdq) {
            TensorProto scale = qdq.getInputCount() > 2 ? initializers.get(qdq.getInput(1)) : null;
            TensorProto zero = qdq.getInputCount() > 2 ? initializers.get(qdq.getInput(2)) : null;
            if (scale == null || zero == null) {
                throw new IllegalArgumentException(qdq.getName() + ": its encoding is not a constant of the graph");
            }
            ByteBuffer s = scale.getRawData().asReadOnlyByteBuffer().order(ByteOrder.LITTLE_ENDIAN);
            ByteBuffer z = zero.getRawData().asReadOnlyByteBuffer().order(ByteOrder.LITTLE_ENDIAN);
            boolean wide = zero.getDataType() == DataType.UINT16.getNumber();
            return new Encoding(wide ? 16 : 8, s.getFloat(0), wide ? Short.toUnsignedInt(z.getShort(0)) : Byte.toUnsignedInt(z.get(0)));
        }
    }

    /** The graph with its float inputs and outputs in their quantized types. */
    public static ModelProto apply(ModelProto m) {
        GraphProto g = m.getGraph();
        Index index = Index.of(g);
        Set<NodeProto> drop = Collections.newSetFromMap(new IdentityHashMap<>());
        Map<String, String> rename = new HashMap<>();
        GraphProto.Builder out = g.toBuilder().clearNode();
        for (int i = 0; i < g.getInputCount(); i++) {
            ValueInfoProto v = g.getInput(i);
            if (v.getType().getTensorType().getElemType() != DataType.FLOAT.getNumber()) {
                continue;
            }
            List<NodeProto> uses = index.consumers().getOrDefault(v.getName(), List.of());
            if (uses.size() != 1 || !uses.get(0).getOpType().equals("QuantizeLinear")) {
                throw new IllegalArgumentException("graph input " + v.getName() + " is not read by one QuantizeLinear: "
                        + "quantized IO needs a fully quantized graph");
            }
            NodeProto q = uses.get(0);
            drop.add(q);
            rename.put(q.getOutput(0), v.getName());
            out.setInput(i, withType(v, index.encoding(q).type()));
        }
        for (int i = 0; i < g.getOutputCount(); i++) {
            ValueInfoProto v = g.getOutput(i);
            if (v.getType().getTensorType().getElemType() != DataType.FLOAT.getNumber()) {
                continue;
            }
            NodeProto dq = index.producers().get(v.getName());
            if (dq == null || !dq.getOpType().equals("DequantizeLinear")) {
                throw new IllegalArgumentException("graph output " + v.getName() + " is not written by a DequantizeLinear: "
                        + "quantized IO needs a fully quantized graph");
            }
            if (index.consumers().containsKey(v.getName())) {
                // also read inside the graph: the DequantizeLinear stays for those readers, under a name of its own
                rename.put(v.getName(), v.getName() + "/dq");
            } else {
                drop.add(dq);
            }
            rename.put(dq.getInput(0), v.getName());
            out.setOutput(i, withType(v, index.encoding(dq).type()));
        }
        for (NodeProto n : g.getNodeList()) {
            if (!drop.contains(n)) {
                out.addNode(renamed(n, rename));
            }
        }
        return m.toBuilder().setGraph(out).build();
    }

    /** The encoding of every quantized input (read by a DequantizeLinear) and output (written by a QuantizeLinear). */
    public static Map<String, Boundary> encodings(GraphProto g) {
        Index index = Index.of(g);
        Map<String, Boundary> out = new LinkedHashMap<>();
        for (ValueInfoProto v : g.getInputList()) {
            List<NodeProto> uses = index.consumers().getOrDefault(v.getName(), List.of());
            if (quantized(v) && !uses.isEmpty() && uses.stream().allMatch(n -> n.getOpType().equals("DequantizeLinear"))) {
                out.put(v.getName(), new Boundary(v.getName(), true, index.encoding(uses.get(0))));
            }
        }
        for (ValueInfoProto v : g.getOutputList()) {
            NodeProto q = index.producers().get(v.getName());
            if (quantized(v) && q != null && q.getOpType().equals("QuantizeLinear")) {
                out.put(v.getName(), new Boundary(v.getName(), false, index.encoding(q)));
            }
        }
        return out;
    }

    /**
     * The graph with float inputs and outputs again: each quantized input becomes a float input quantized at its
     * encoding, each quantized output is dequantized at its own; the rest of the graph is untouched.
     */
    public static ModelProto floatBoundary(ModelProto m) {
        GraphProto g = m.getGraph();
        Map<String, Boundary> io = encodings(g);
        GraphProto.Builder out = g.toBuilder().clearNode();
        List<NodeProto> before = new ArrayList<>();
        List<NodeProto> after = new ArrayList<>();
        Map<String, String> rename = new HashMap<>();
        for (int i = 0; i < g.getInputCount(); i++) {
            Boundary b = io.get(g.getInput(i).getName());
            if (b != null) {
                rename.put(b.name(), b.name() + "/quantized");
                before.add(qdqNode("QuantizeLinear", b, b.name(), b.name() + "/quantized", out));
                out.setInput(i, withType(g.getInput(i), DataType.FLOAT));
            }
        }
        for (int i = 0; i < g.getOutputCount(); i++) {
            Boundary b = io.get(g.getOutput(i).getName());
            if (b != null) {
                rename.put(b.name(), b.name() + "/quantized");
                after.add(qdqNode("DequantizeLinear", b, b.name() + "/quantized", b.name(), out));
                out.setOutput(i, withType(g.getOutput(i), DataType.FLOAT));
            }
        }
        out.addAllNode(before);
        g.getNodeList().forEach(n -> out.addNode(renamed(n, rename)));
        out.addAllNode(after);
        return m.toBuilder().setGraph(out).build();
    }

    /** {@code n} reading and writing its values under their new names. */
    private static NodeProto renamed(NodeProto n, Map<String, String> rename) {
        NodeProto.Builder b = n.toBuilder();
        for (int k = 0; k < n.getInputCount(); k++) {
            b.setInput(k, rename.getOrDefault(n.getInput(k), n.getInput(k)));
        }
        for (int k = 0; k < n.getOutputCount(); k++) {
            b.setOutput(k, rename.getOrDefault(n.getOutput(k), n.getOutput(k)));
        }
        return b.build();
    }

    private static NodeProto qdqNode(String op, Boundary b, String in, String outName, GraphProto.Builder g) {
        String scale = b.name() + "/boundary_scale";
        String zero = b.name() + "/boundary_zero_point";
        g.addInitializer(b.encoding().scaleTensor(scale));
        g.addInitializer(b.encoding().zeroPointTensor(zero));
        return NodeProto.newBuilder().setName(b.name() + "/boundary_" + op).setOpType(op).addInput(in).addInput(scale)
                .addInput(zero).addOutput(outName).build();
    }

    private static boolean quantized(ValueInfoProto v) {
        int t = v.getType().getTensorType().getElemType();
        return t == DataType.UINT16.getNumber() || t == DataType.UINT8.getNumber();
    }

    private static ValueInfoProto withType(ValueInfoProto v, DataType type) {
        ValueInfoProto.Builder b = v.toBuilder();
        b.getTypeBuilder().getTensorTypeBuilder().setElemType(type.getNumber());
        return b.build();
    }
}
