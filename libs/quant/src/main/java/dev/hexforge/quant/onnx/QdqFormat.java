package dev.hexforge.quant.onnx;

import dev.hexforge.checkpoint.TensorNames;
import dev.hexforge.checkpoint.TensorNames.Linear;
import dev.hexforge.onnx.builder.ExternalDataWriter;
import dev.hexforge.onnx.builder.GraphBuilder;
import dev.hexforge.onnx.builder.GraphBuilder.Attr;
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
import java.util.Map;
import java.util.function.Function;

/**
 * {@code DequantizeLinear(W_q [in, out], scale, zero_point) → MatMul}: the form QNN's converter and the NPU path
 * take. Per-channel specs dequantize per output column (axis 1); grouped specs are blocked along the input axis
 * (axis 0, opset 21). 4-bit values use INT4 / UINT4 (packed), other widths an 8-bit container.
 */
public final class QdqFormat extends QuantizedLinearFormat {

    public QdqFormat(QuantizedModel model) {
        super(model);
    }


    @Override
    public int minOpset() {
        QuantSpec s = model.spec();
        return s.bits() == 4 || s.groupSize() > 0 ? 21 : 17;
    }

    private DataType valueType() {
        QuantSpec s = model.spec();
        if (s.bits() == 4) {
            return s.symmetric() ? DataType.INT4 : DataType.UINT4;
        }
        return s.symmetric() ? DataType.INT8 : DataType.UINT8;
    }

    @Override
    public void writeWeights(ExternalDataWriter out, WeightFile weights) throws IOException {
        for (var e : model.linears().entrySet()) {
            QuantizedLinear q = e.getValue();
            String base = e.getKey();
            int k = q.in();
            int n = q.out();
            int groups = q.groups();
            int[] values = new int[k * n];
            for (int o = 0; o < n; o++) {
                for (int i = 0; i < k; i++) {
                    values[i * n + o] = q.value(o, i);
                }
            }
            weights.put(base + "_quantized", valueType(), new long[]{k, n}, out.write(ByteBuffer.wrap(encode(values))));
            boolean perChannel = model.spec().groupSize() == 0;
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
            if (!model.spec().symmetric()) {
                weights.put(base + "_zero_point", valueType(), paramShape, out.write(ByteBuffer.wrap(encode(zeros))));
            }
        }
    }

    private byte[] encode(int[] values) {
        if (model.spec().bits() == 4) {
            return Nibbles.pack(values);
        }
        byte[] b = new byte[values.length];
        for (int i = 0; i < values.length; i++) {
            b[i] = (byte) values[i];
        }
        return b;
    }

    @Override
    public String emit(GraphBuilder g, Function<String, String> initializer, String scope, String x, int layer,
                       Linear linear, String bias) {
        String base = TensorNames.weight(layer, linear);
        List<String> dqInputs = new ArrayList<>(List.of(initializer.apply(base + "_quantized"), initializer.apply(base + "_scale")));
        if (!model.spec().symmetric()) {
            dqInputs.add(initializer.apply(base + "_zero_point"));
        }
        QuantSpec s = model.spec();
        String w = s.groupSize() == 0
                ? g.op(scope, "DequantizeLinear", dqInputs, Attr.i("axis", 1))
                : g.op(scope, "DequantizeLinear", dqInputs, Attr.i("axis", 0), Attr.i("block_size", s.groupSize()));
        String y = g.op(scope, "MatMul", x, w);
        return bias == null ? y : g.op(scope, "Add", y, bias);
    }
}
