package dev.hexforge.onnx.builder;

import com.google.protobuf.ByteString;
import dev.hexforge.onnx.proto.Onnx.AttributeProto;
import dev.hexforge.onnx.proto.Onnx.GraphProto;
import dev.hexforge.onnx.proto.Onnx.ModelProto;
import dev.hexforge.onnx.proto.Onnx.NodeProto;
import dev.hexforge.onnx.proto.Onnx.OperatorSetIdProto;
import dev.hexforge.onnx.proto.Onnx.StringStringEntryProto;
import dev.hexforge.onnx.proto.Onnx.TensorProto;
import dev.hexforge.onnx.proto.Onnx.TensorShapeProto;
import dev.hexforge.onnx.proto.Onnx.TypeProto;
import dev.hexforge.onnx.proto.Onnx.ValueInfoProto;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Builds an ONNX graph node by node. Values are named by the caller's scope plus the op, so graphs read like the
 * model they come from; small constants are stored inline, weights as external data.
 */
public final class GraphBuilder {
    private final GraphProto.Builder graph = GraphProto.newBuilder();
    private final int opset;
    private final Map<String, Integer> domains = new LinkedHashMap<>();
    private final Map<String, Integer> counters = new HashMap<>();
    private final Map<String, String> constantCache = new HashMap<>();

    public GraphBuilder(String name, int opset) {
        this.opset = opset;
        graph.setName(name);
    }

    public int opset() {
        return opset;
    }

    /** An attribute for {@link #op}. */
    public record Attr(AttributeProto proto) {
        public static Attr i(String name, long v) {
            return new Attr(AttributeProto.newBuilder().setName(name).setType(AttributeProto.AttributeType.INT).setI(v).build());
        }

        public static Attr f(String name, float v) {
            return new Attr(AttributeProto.newBuilder().setName(name).setType(AttributeProto.AttributeType.FLOAT).setF(v).build());
        }

        public static Attr ints(String name, long... v) {
            AttributeProto.Builder b = AttributeProto.newBuilder().setName(name).setType(AttributeProto.AttributeType.INTS);
            for (long x : v) {
                b.addInts(x);
            }
            return new Attr(b.build());
        }

        public static Attr s(String name, String v) {
            return new Attr(AttributeProto.newBuilder().setName(name).setType(AttributeProto.AttributeType.STRING)
                    .setS(ByteString.copyFromUtf8(v)).build());
        }

        public static Attr tensor(String name, TensorProto t) {
            return new Attr(AttributeProto.newBuilder().setName(name).setType(AttributeProto.AttributeType.TENSOR).setT(t).build());
        }
    }

    /** Dimensions: Long for fixed, String for symbolic. */
    public static TypeProto tensorType(TensorProto.DataType type, Object... dims) {
        TensorShapeProto.Builder shape = TensorShapeProto.newBuilder();
        for (Object d : dims) {
            TensorShapeProto.Dimension.Builder db = TensorShapeProto.Dimension.newBuilder();
            if (d instanceof String s) {
                db.setDimParam(s);
            } else {
                db.setDimValue(((Number) d).longValue());
            }
            shape.addDim(db);
        }
        return TypeProto.newBuilder().setTensorType(TypeProto.Tensor.newBuilder().setElemType(type.getNumber()).setShape(shape)).build();
    }

    public String input(String name, TensorProto.DataType type, Object... dims) {
        graph.addInput(ValueInfoProto.newBuilder().setName(name).setType(tensorType(type, dims)));
        return name;
    }

    public void output(String value, TensorProto.DataType type, Object... dims) {
        graph.addOutput(ValueInfoProto.newBuilder().setName(value).setType(tensorType(type, dims)));
    }

    /** Adds a node in the default domain; returns its single output, named {@code scope/op_out}. */
    public String op(String scope, String opType, List<String> inputs, Attr... attrs) {
        return opIn("", scope, opType, inputs, 1, attrs)[0];
    }

    public String op(String scope, String opType, String... inputs) {
        return op(scope, opType, List.of(inputs));
    }

    /** A node in any domain with any number of outputs. */
    public String[] opIn(String domain, String scope, String opType, List<String> inputs, int outputs, Attr... attrs) {
        String base = scope + "/" + opType;
        int n = counters.merge(base, 1, Integer::sum);
        String nodeName = n == 1 ? base : base + "_" + n;
        NodeProto.Builder node = NodeProto.newBuilder().setName(nodeName).setOpType(opType).addAllInput(inputs);
        if (!domain.isEmpty()) {
            node.setDomain(domain);
            domains.putIfAbsent(domain, 1);
        }
        String[] outs = new String[outputs];
        for (int i = 0; i < outputs; i++) {
            outs[i] = nodeName + "_output_" + i;
            node.addOutput(outs[i]);
        }
        for (Attr a : attrs) {
            node.addAttribute(a.proto());
        }
        graph.addNode(node);
        return outs;
    }

    /** Renames the last node's output to a graph output name. */
    public String opNamed(String outputName, String scope, String opType, List<String> inputs, Attr... attrs) {
        return rename(op(scope, opType, inputs, attrs), outputName);
    }

    /** Gives a value produced by an earlier node a new name (e.g. a graph output); the value must not be consumed yet. */
    public String rename(String value, String newName) {
        for (int n = graph.getNodeCount() - 1; n >= 0; n--) {
            NodeProto node = graph.getNode(n);
            if (node.getInputList().contains(value)) {
                throw new IllegalStateException("cannot rename '" + value + "': already consumed by " + node.getName());
            }
            int idx = node.getOutputList().indexOf(value);
            if (idx >= 0) {
                graph.setNode(n, node.toBuilder().setOutput(idx, newName));
                return newName;
            }
        }
        throw new IllegalArgumentException("no node produces '" + value + "'");
    }

    public void addDomain(String domain, int version) {
        domains.put(domain, version);
    }

    /** An int64 constant stored inline; identical constants are shared. */
    public String constInt64(long... values) {
        return constInt64Shaped(new long[]{values.length}, values);
    }

    public String scalarInt64(long value) {
        return constInt64Shaped(new long[]{}, value);
    }

    private String constInt64Shaped(long[] dims, long... values) {
        String key = "i64" + Arrays.toString(dims) + Arrays.toString(values);
        return constantCache.computeIfAbsent(key, k ->
                inlineInitializer("const_i64_" + constantCache.size(), TensorProto.DataType.INT64, dims, int64Bytes(values)));
    }

    /** A named int64 [values.length] initializer of its own, never shared with an equal constant (a runtime may replace it by name). */
    public String int64Initializer(String name, long... values) {
        return inlineInitializer(name, TensorProto.DataType.INT64, new long[]{values.length}, int64Bytes(values));
    }

    private static byte[] int64Bytes(long[] values) {
        ByteBuffer b = ByteBuffer.allocate(values.length * 8).order(ByteOrder.LITTLE_ENDIAN);
        for (long v : values) {
            b.putLong(v);
        }
        return b.array();
    }

    public String constFloat(long[] dims, float... values) {
        String key = "f32" + Arrays.toString(dims) + Arrays.toString(values);
        return constantCache.computeIfAbsent(key, k -> {
            ByteBuffer b = ByteBuffer.allocate(values.length * 4).order(ByteOrder.LITTLE_ENDIAN);
            for (float v : values) {
                b.putFloat(v);
            }
            return inlineInitializer("const_f32_" + constantCache.size(), TensorProto.DataType.FLOAT, dims, b.array());
        });
    }

    public String scalarFloat(float v) {
        return constFloat(new long[]{}, v);
    }

    public String inlineInitializer(String name, TensorProto.DataType type, long[] dims, byte[] raw) {
        TensorProto.Builder t = TensorProto.newBuilder().setName(name).setDataType(type.getNumber()).setRawData(ByteString.copyFrom(raw));
        for (long d : dims) {
            t.addDims(d);
        }
        graph.addInitializer(t);
        return name;
    }

    public String externalInitializer(String name, TensorProto.DataType type, long[] dims, ExternalDataWriter.Location loc) {
        TensorProto.Builder t = TensorProto.newBuilder().setName(name).setDataType(type.getNumber())
                .setDataLocation(TensorProto.DataLocation.EXTERNAL)
                .addExternalData(entry("location", loc.file()))
                .addExternalData(entry("offset", Long.toString(loc.offset())))
                .addExternalData(entry("length", Long.toString(loc.length())));
        for (long d : dims) {
            t.addDims(d);
        }
        graph.addInitializer(t);
        return name;
    }

    private static StringStringEntryProto entry(String k, String v) {
        return StringStringEntryProto.newBuilder().setKey(k).setValue(v).build();
    }

    /** ReduceMean over the last axis with keepdims, in the form the opset expects (axes attribute before 18). */
    public String reduceMeanLastAxis(String scope, String x) {
        if (opset >= 18) {
            return op(scope, "ReduceMean", List.of(x, constInt64(-1)), Attr.i("keepdims", 1));
        }
        return op(scope, "ReduceMean", List.of(x), Attr.ints("axes", -1), Attr.i("keepdims", 1));
    }

    public ModelProto build(String producer, String version, Map<String, String> metadata) {
        ModelProto.Builder m = ModelProto.newBuilder()
                .setIrVersion(opset >= 21 ? 10 : 8)
                .setProducerName(producer)
                .setProducerVersion(version)
                .setGraph(graph)
                .addOpsetImport(OperatorSetIdProto.newBuilder().setDomain("").setVersion(opset));
        domains.forEach((d, v) -> m.addOpsetImport(OperatorSetIdProto.newBuilder().setDomain(d).setVersion(v)));
        // by key: a Map.of's order changes from one JVM to the next, and the same export must give the same bytes
        new TreeMap<>(metadata).forEach((k, v) -> m.addMetadataProps(entry(k, v)));
        return m.build();
    }
}
