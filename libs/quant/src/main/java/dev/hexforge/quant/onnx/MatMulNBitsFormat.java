package dev.hexforge.quant.onnx;

import dev.hexforge.checkpoint.TensorNames;
import dev.hexforge.checkpoint.TensorNames.Linear;
import dev.hexforge.onnx.builder.ExternalDataWriter;
import dev.hexforge.onnx.builder.GraphBuilder;
import dev.hexforge.onnx.builder.GraphBuilder.Attr;
import dev.hexforge.onnx.export.WeightFile;
import dev.hexforge.onnx.proto.Onnx.TensorProto.DataType;
import dev.hexforge.quant.QuantSpec;
import dev.hexforge.quant.QuantizationException;
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
 * {@code com.microsoft.MatMulNBits}: ONNX Runtime's CPU fast path for 4- and 8-bit weights. Weights are
 * [out, blocks, block * bits / 8] unsigned bytes; a symmetric spec is stored offset by 2^(bits-1), which is also
 * the operator's default zero point. ONNX Runtime takes blocks of 16 to 256, so a per-channel spec is written as
 * blocks of 128 that all carry the row's scale (exact: the same values, the same scale).
 * <p>
 * The node's {@code accuracy_level} picks ONNX Runtime's compute: {@link #INT8_ACTIVATIONS} (4) quantizes each
 * activation block to int8 and runs integer dot products (the CPU fast path: decode reads the packed weights once,
 * instead of dequantizing them to float each step), {@link #EXACT} (0) computes in float32 and matches the
 * fake-quantized reference bit for bit.
 */
public final class MatMulNBitsFormat extends QuantizedLinearFormat {
    public static final String DOMAIN = "com.microsoft";
    static final int MAX_BLOCK = 256;
    /** Block used for per-channel specs: every block of a row repeats the row's one scale. */
    static final int PER_CHANNEL_BLOCK = 128;

    public static final int EXACT = 0;
    public static final int INT8_ACTIVATIONS = 4;
    private final int accuracyLevel;

    /** @param accuracyLevel ONNX Runtime's MatMulNBits accuracy level: 0 (float32, exact) to 4 (int8 activations) */
    public MatMulNBitsFormat(QuantizedModel model, int accuracyLevel) {
        super(model);
        if (accuracyLevel < 0 || accuracyLevel > 4) {
            throw new QuantizationException("MatMulNBits accuracy level is 0 to 4 (4: int8 activations, 0: float32), not " + accuracyLevel);
        }
        this.accuracyLevel = accuracyLevel;
        QuantSpec s = model.spec();
        if (s.bits() != 4 && s.bits() != 8) {
            throw new QuantizationException("MatMulNBits takes 4 or 8 bits, not " + s.bits() + "; use --format qdq for other widths");
        }
        if (s.groupSize() > 0 && (Integer.bitCount(s.groupSize()) != 1 || s.groupSize() < 16 || s.groupSize() > MAX_BLOCK)) {
            throw new QuantizationException("MatMulNBits needs a group size of 16, 32, 64, 128 or 256, not " + s.groupSize());
        }
    }


    @Override
    public Map<String, Integer> domains() {
        return Map.of(DOMAIN, 1);
    }

    int blockSize(QuantizedLinear q) {
        if (model.spec().groupSize() > 0) {
            return model.spec().groupSize();
        }
        return Math.min(PER_CHANNEL_BLOCK, Math.max(16, Integer.highestOneBit(Math.max(1, q.in() - 1)) << 1));
    }

    @Override
    public void writeWeights(ExternalDataWriter out, WeightFile weights) throws IOException {
        int bits = model.spec().bits();
        int offset = model.spec().symmetric() ? 1 << (bits - 1) : 0;
        for (var e : model.linears().entrySet()) {
            QuantizedLinear q = e.getValue();
            String base = e.getKey();
            int block = blockSize(q);
            int blocks = (q.in() + block - 1) / block;
            int blob = block * bits / 8;
            int groups = q.groups();
            int[] row = new int[blocks * block];
            ByteBuffer b = ByteBuffer.allocate(q.out() * blocks * blob);
            ByteBuffer scales = ByteBuffer.allocate(q.out() * blocks * 4).order(ByteOrder.LITTLE_ENDIAN);
            int zpBytes = (blocks * bits + 7) / 8;
            byte[] zps = new byte[q.out() * zpBytes];
            for (int o = 0; o < q.out(); o++) {
                for (int j = 0; j < row.length; j++) {
                    int grp = Math.min(j / model.spec().effectiveGroup(q.in()), groups - 1);
                    row[j] = j < q.in() ? q.value(o, j) + offset : q.zero(o, grp) + offset;
                }
                if (bits == 4) {
                    b.put(Nibbles.pack(row));
                } else {
                    for (int v : row) {
                        b.put((byte) v);
                    }
                }
                int[] rowZeros = new int[blocks];
                for (int blk = 0; blk < blocks; blk++) {
                    int grp = groups == 1 ? 0 : blk;
                    scales.putFloat(q.scale(o, grp));
                    rowZeros[blk] = q.zero(o, grp);
                }
                byte[] packed = bits == 4 ? Nibbles.pack(rowZeros) : toBytes(rowZeros);
                System.arraycopy(packed, 0, zps, o * zpBytes, packed.length);
            }
            b.flip();
            scales.flip();
            weights.put(base + "_nbits", DataType.UINT8, new long[]{q.out(), blocks, blob}, out.write(b));
            weights.put(base + "_nbits_scales", DataType.FLOAT, new long[]{q.out(), blocks}, out.write(scales));
            if (!model.spec().symmetric()) {
                weights.put(base + "_nbits_zero_points", DataType.UINT8, new long[]{q.out(), zpBytes}, out.write(ByteBuffer.wrap(zps)));
            }
        }
    }

    private static byte[] toBytes(int[] v) {
        byte[] b = new byte[v.length];
        for (int i = 0; i < v.length; i++) {
            b[i] = (byte) v[i];
        }
        return b;
    }

    @Override
    public String emit(GraphBuilder g, Function<String, String> initializer, String scope, String x, int layer,
                       Linear linear, String bias) {
        String base = TensorNames.weight(layer, linear);
        QuantizedLinear q = model.get(layer, linear);
        List<String> in = new ArrayList<>(List.of(x, initializer.apply(base + "_nbits"), initializer.apply(base + "_nbits_scales")));
        boolean zeroPoints = !model.spec().symmetric();
        if (zeroPoints || bias != null) {
            in.add(zeroPoints ? initializer.apply(base + "_nbits_zero_points") : "");
        }
        if (bias != null) {
            in.add("");
            in.add(bias);
        }
        return g.opIn(DOMAIN, scope, "MatMulNBits", in, 1,
                Attr.i("K", q.in()), Attr.i("N", q.out()), Attr.i("bits", model.spec().bits()),
                Attr.i("block_size", blockSize(q)), Attr.i("accuracy_level", accuracyLevel))[0];
    }
}
