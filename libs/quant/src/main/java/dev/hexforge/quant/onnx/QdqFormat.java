package dev.hexforge.quant.onnx;

import dev.hexforge.onnx.builder.ExternalDataWriter;
import dev.hexforge.onnx.builder.GraphBuilder.Attr;
import dev.hexforge.onnx.builder.GraphBuilder;
import dev.hexforge.onnx.export.WeightFile;
import dev.hexforge.onnx.proto.Onnx.TensorProto.DataType;
import dev.hexforge.quant.QuantSpec;
import dev.hexforge.quant.QuantizedLinear;
import dev.hexforge.quant.QuantizedModel;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import java.util.stream.IntStream;

/**
 * {@code DequantizeLinear(W_q [in, out], scale, zero_point) → MatMul}: the form QNN's converter and the NPU path
 * take. Per-channel specs dequantize per output column (axis 1); grouped specs are blocked along the input axis
 * (axis 0, opset 21). 4-bit values use INT4 / UINT4 (packed), other widths an 8-bit container. A quantized LM head
 * is the same; the embedding lookup gathers columns of the same dequantized [hidden, vocab] tensor (a tied model
 * stores it once) and transposes them to rows.
 */
public final class QdqFormat extends QuantizedLinearFormat {

    public QdqFormat(QuantizedModel model) {
        super(model);
    }

    @Override
    public int minOpset() {
        int opset = 17;
        for (String name : tensors.keySet()) {
            QuantSpec s = shape(name).spec();
            if (s.bits() == 4 || s.groupSize() > 0) {
                opset = 21;
            }
        }
        return opset;
    }

    private static DataType valueType(QuantSpec s) {
        if (s.bits() == 4) {
            return s.symmetric() ? DataType.INT4 : DataType.UINT4;
        }
        return s.symmetric() ? DataType.INT8 : DataType.UINT8;
    }

    @Override
    public void writeWeights(ExternalDataWriter out, WeightFile weights) throws IOException {
        for (String base : tensors.keySet()) {
            if (weights.done(base)) {
                continue; // written by the run this one continues
            }
            QuantizedLinear q = tensors.get(base);
            QuantSpec s = q.spec();
            int k = q.in();
            int n = q.out();
            int groups = q.groups();
            byte[] values = transposed(q);
            weights.put(base + "_quantized", valueType(s), new long[]{k, n},
                    out.write(ByteBuffer.wrap(s.bits() == 4 ? Nibbles.pack(values) : values)));
            boolean perChannel = s.groupSize() == 0;
            long[] paramShape = perChannel ? new long[]{n} : new long[]{groups, n};
            ByteBuffer scales = ByteBuffer.allocate(groups * n * 4).order(ByteOrder.LITTLE_ENDIAN);
            int[] zeros = new int[groups * n];
            for (int g = 0; g < groups; g++) {
                for (int o = 0; o < n; o++) {
                    scales.putFloat(q.scale(o, g));
                    zeros[g * n + o] = q.zero(o, g);
                }
            }
            scales.flip();
            weights.put(base + "_scale", DataType.FLOAT, paramShape, out.write(scales));
            if (!s.symmetric()) {
                weights.put(base + "_zero_point", valueType(s), paramShape, out.write(ByteBuffer.wrap(encode(zeros, s))));
            }
            weights.commit(base);
        }
    }

    /** The values as [in, out] bytes, transposed tile by tile so both sides are walked in cache-sized runs. */
    static byte[] transposed(QuantizedLinear q) {
        int k = q.in();
        int n = q.out();
        byte[] src = q.q();
        byte[] t = new byte[k * n];
        final int tile = 64;
        // tiles of output rows on every core: each writes its own columns of the result
        IntStream.range(0, (n + tile - 1) / tile).parallel().forEach(tileIndex -> {
            int o0 = tileIndex * tile;
            int o1 = Math.min(n, o0 + tile);
            for (int i0 = 0; i0 < k; i0 += tile) {
                int i1 = Math.min(k, i0 + tile);
                for (int o = o0; o < o1; o++) {
                    int row = o * k;
                    for (int i = i0; i < i1; i++) {
                        t[i * n + o] = src[row + i];
                    }
                }
            }
        });
        return t;
    }

    private static byte[] encode(int[] values, QuantSpec s) {
        if (s.bits() == 4) {
            return Nibbles.pack(values);
        }
        byte[] b = new byte[values.length];
        for (int i = 0; i < values.length; i++) {
            b[i] = (byte) values[i];
        }
        return b;
    }

    /** The float [in, out] weight. */
    private String dequantized(GraphBuilder g, Function<String, String> initializer, String scope, String weight) {
        QuantSpec s = shape(weight).spec();
        List<String> dqInputs = new ArrayList<>(List.of(initializer.apply(weight + "_quantized"), initializer.apply(weight + "_scale")));
        if (!s.symmetric()) {
            dqInputs.add(initializer.apply(weight + "_zero_point"));
        }
        return s.groupSize() == 0
                ? g.op(scope, "DequantizeLinear", dqInputs, Attr.i("axis", 1))
                : g.op(scope, "DequantizeLinear", dqInputs, Attr.i("axis", 0), Attr.i("block_size", s.groupSize()));
    }

    @Override
    public String emit(GraphBuilder g, Function<String, String> initializer, String scope, String x, String weight,
                       String bias) {
        String w = dequantized(g, initializer, scope, weight);
        // with a bias, one Gemm: the form whose bias a fully quantized graph stores as int32 (input scale × weight scale)
        return bias == null ? g.op(scope, "MatMul", x, w) : g.op(scope, "Gemm", x, w, bias);
    }

    @Override
    public String emitLookup(GraphBuilder g, Function<String, String> initializer, String scope, String ids, String weight) {
        String columns = g.op(scope, "Gather", List.of(dequantized(g, initializer, scope, weight), ids), Attr.i("axis", 1));
        return g.op(scope, "Transpose", List.of(columns), Attr.ints("perm", 1, 0));
    }
}
