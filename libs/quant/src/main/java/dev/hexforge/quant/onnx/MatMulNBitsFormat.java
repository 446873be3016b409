package dev.hexforge.quant.onnx;

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
 * <p>
 * A quantized LM head is one more MatMulNBits; the embedding lookup gathers the rows of the same packed tensors and
 * dequantizes them with standard ops ({@code (q - zero) * scale}, exact in float32), so a tied model stores its
 * embedding once.
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
        String problem = problem(model);
        if (problem != null) {
            throw new QuantizationException(problem);
        }
    }

    /** Whether MatMulNBits can hold every quantized tensor of the model. */
    public static boolean runs(QuantizedModel model) {
        return problem(model) == null;
    }

    private static String problem(QuantizedModel model) {
        String p = problem(model.spec(), "");
        return p != null || model.headSpec() == null ? p : problem(model.headSpec(), "the embedding and head: ");
    }

    private static String problem(QuantSpec s, String what) {
        if (s.bits() != 4 && s.bits() != 8) {
            return what + "MatMulNBits takes 4 or 8 bits, not " + s.bits() + "; use --format qdq for other widths";
        }
        if (s.groupSize() > 0 && (Integer.bitCount(s.groupSize()) != 1 || s.groupSize() < 16 || s.groupSize() > MAX_BLOCK)) {
            return what + "MatMulNBits needs a group size of 16, 32, 64, 128 or 256, not " + s.groupSize();
        }
        return null;
    }


    @Override
    public Map<String, Integer> domains() {
        return Map.of(DOMAIN, 1);
    }

    static int blockSize(QuantizedLinear q) {
        return blockSize(q.shape());
    }

    static int blockSize(QuantizedLinear.Shape q) {
        if (q.spec().groupSize() > 0) {
            return q.spec().groupSize();
        }
        return Math.min(PER_CHANNEL_BLOCK, Math.max(16, Integer.highestOneBit(Math.max(1, q.in() - 1)) << 1));
    }

    @Override
    public void writeWeights(ExternalDataWriter out, WeightFile weights) throws IOException {
        ByteBuffer piece = ByteBuffer.allocateDirect(PIECE_BYTES);
        for (String base : tensors.keySet()) {
            if (weights.done(base)) {
                continue; // written by the run this one continues
            }
            QuantizedLinear q = tensors.get(base);
            int bits = q.spec().bits();
            int block = blockSize(q);
            int blocks = (q.in() + block - 1) / block;
            int blob = block * bits / 8;
            int groups = q.groups();
            weights.put(base + "_nbits", DataType.UINT8, new long[]{q.out(), blocks, blob}, packedValues(out, q, piece, blocks * block));
            ByteBuffer scales = ByteBuffer.allocate(q.out() * blocks * 4).order(ByteOrder.LITTLE_ENDIAN);
            int zpBytes = (blocks * bits + 7) / 8;
            byte[] zps = new byte[q.out() * zpBytes];
            int[] rowZeros = new int[blocks];
            for (int o = 0; o < q.out(); o++) {
                for (int blk = 0; blk < blocks; blk++) {
                    int grp = groups == 1 ? 0 : blk;
                    scales.putFloat(q.scale(o, grp));
                    rowZeros[blk] = q.zero(o, grp);
                }
                byte[] packed = bits == 4 ? Nibbles.pack(rowZeros) : toBytes(rowZeros);
                System.arraycopy(packed, 0, zps, o * zpBytes, packed.length);
            }
            scales.flip();
            weights.put(base + "_nbits_scales", DataType.FLOAT, new long[]{q.out(), blocks}, out.write(scales));
            if (!q.spec().symmetric()) {
                weights.put(base + "_nbits_zero_points", DataType.UINT8, new long[]{q.out(), zpBytes}, out.write(ByteBuffer.wrap(zps)));
            }
            weights.commit(base);
        }
    }

    private static final int PIECE_BYTES = 1 << 22;

    /**
     * The values row by row as unsigned {@code bits}-bit numbers (a symmetric spec offset by 2^(bits-1)), each row
     * padded to {@code padded} columns with its last group's zero point, packed two to a byte at 4 bits; written a
     * piece at a time.
     */
    private static ExternalDataWriter.Location packedValues(ExternalDataWriter out, QuantizedLinear q, ByteBuffer piece,
                                                            int padded) throws IOException {
        int bits = q.spec().bits();
        int offset = q.spec().symmetric() ? 1 << (bits - 1) : 0;
        int in = q.in();
        byte[] values = q.q();
        int rowBytes = padded * bits / 8;
        byte[] row = new byte[rowBytes];
        long start = out.beginPiecewise();
        piece.clear();
        for (int o = 0; o < q.out(); o++) {
            int from = o * in;
            int pad = q.zero(o, q.groups() - 1) + offset;
            if (bits == 8) {
                for (int i = 0; i < in; i++) {
                    row[i] = (byte) (values[from + i] + offset);
                }
                for (int i = in; i < padded; i++) {
                    row[i] = (byte) pad;
                }
            } else {
                boolean signed = q.spec().symmetric();
                for (int j = 0; j < padded; j += 2) {
                    int lo = j < in ? (signed ? values[from + j] : values[from + j] & 0xff) + offset : pad;
                    int hi = j + 1 < in ? (signed ? values[from + j + 1] : values[from + j + 1] & 0xff) + offset : pad;
                    row[j >> 1] = (byte) ((lo & 0x0f) | (hi & 0x0f) << 4);
                }
            }
            if (piece.remaining() < rowBytes) {
                piece.flip();
                out.writePiece(piece);
                piece.clear();
            }
            if (rowBytes > piece.capacity()) {
                out.writePiece(ByteBuffer.wrap(row));
            } else {
                piece.put(row);
            }
        }
        piece.flip();
        out.writePiece(piece);
        piece.clear();
        return out.endPiecewise(start);
    }

    private static byte[] toBytes(int[] v) {
        byte[] b = new byte[v.length];
        for (int i = 0; i < v.length; i++) {
            b[i] = (byte) v[i];
        }
        return b;
    }

    @Override
    public String emit(GraphBuilder g, Function<String, String> initializer, String scope, String x, String weight,
                       String bias) {
        QuantizedLinear.Shape q = shape(weight);
        List<String> in = new ArrayList<>(List.of(x, initializer.apply(weight + "_nbits"), initializer.apply(weight + "_nbits_scales")));
        boolean zeroPoints = !q.spec().symmetric();
        if (zeroPoints || bias != null) {
            in.add(zeroPoints ? initializer.apply(weight + "_nbits_zero_points") : "");
        }
        if (bias != null) {
            in.add("");
            in.add(bias);
        }
        return g.opIn(DOMAIN, scope, "MatMulNBits", in, 1,
                Attr.i("K", q.in()), Attr.i("N", q.out()), Attr.i("bits", q.spec().bits()),
                Attr.i("block_size", blockSize(q)), Attr.i("accuracy_level", accuracyLevel))[0];
    }

    /**
     * Gathers the packed rows [tokens, blocks, block * bits / 8], widens them to [tokens, blocks, block] values,
     * subtracts the zero point (the symmetric offset, or the gathered zero points) and multiplies by the gathered
     * scales [tokens, blocks, 1]; the padding of a last partial block is sliced off.
     */
    @Override
    public String emitLookup(GraphBuilder g, Function<String, String> initializer, String scope, String ids, String weight) {
        QuantizedLinear.Shape q = shape(weight);
        int bits = q.spec().bits();
        int block = blockSize(q);
        int blocks = (q.in() + block - 1) / block;
        String rows = g.op(scope, "Gather", List.of(initializer.apply(weight + "_nbits"), ids), Attr.i("axis", 0));
        String values = toFloat(g, scope, unpack(g, scope, rows, bits), -1, blocks, block);
        String zero;
        if (q.spec().symmetric()) {
            zero = g.scalarFloat(1 << (bits - 1));
        } else {
            String zps = g.op(scope, "Gather", List.of(initializer.apply(weight + "_nbits_zero_points"), ids), Attr.i("axis", 0));
            String flat = g.op(scope, "Reshape", unpack(g, scope, zps, bits), g.constInt64(0, -1));
            String cut = g.op(scope, "Slice", flat, g.constInt64(0), g.constInt64(blocks), g.constInt64(1));
            zero = toFloat(g, scope, cut, -1, blocks, 1);
        }
        String scales = g.op(scope, "Gather", List.of(initializer.apply(weight + "_nbits_scales"), ids), Attr.i("axis", 0));
        String scale = g.op(scope, "Unsqueeze", scales, g.constInt64(-1));
        String rowsF = g.op(scope, "Mul", g.op(scope, "Sub", values, zero), scale);
        String flat = g.op(scope, "Reshape", rowsF, g.constInt64(-1, (long) blocks * block));
        return blocks * block == q.in() ? flat
                : g.op(scope, "Slice", flat, g.constInt64(0), g.constInt64(q.in()), g.constInt64(1));
    }

    /** Packed bytes to one value per element: 8-bit bytes as they are, 4-bit bytes as (low, high) nibble pairs. */
    private static String unpack(GraphBuilder g, String scope, String bytes, int bits) {
        if (bits == 8) {
            return bytes;
        }
        String wide = g.op(scope, "Cast", List.of(bytes), Attr.i("to", DataType.INT64.getNumber()));
        String sixteen = g.scalarInt64(16);
        String low = g.op(scope, "Unsqueeze", g.op(scope, "Mod", wide, sixteen), g.constInt64(-1));
        String high = g.op(scope, "Unsqueeze", g.op(scope, "Div", wide, sixteen), g.constInt64(-1));
        return g.op(scope, "Concat", List.of(low, high), Attr.i("axis", -1));
    }

    private static String toFloat(GraphBuilder g, String scope, String values, long... shape) {
        String f = g.op(scope, "Cast", List.of(values), Attr.i("to", DataType.FLOAT.getNumber()));
        return g.op(scope, "Reshape", f, g.constInt64(shape));
    }
}
