package dev.hexforge.onnx.qdq;

import com.google.protobuf.ByteString;
import dev.hexforge.onnx.proto.Onnx.TensorProto;
import dev.hexforge.onnx.proto.Onnx.TensorProto.DataType;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * An unsigned affine encoding of one tensor, as ONNX's QuantizeLinear and QNN's encodings read it:
 * {@code real = (q - zeroPoint) * scale} with {@code q} in {@code [0, 2^bits - 1]}. The range always holds 0, so
 * zero (padding, an empty cache slot) is exact.
 */
public record Encoding(int bits, float scale, int zeroPoint) {

    public Encoding {
        if (bits != 8 && bits != 16) {
            throw new IllegalArgumentException("activation encodings are 8 or 16 bits, got " + bits);
        }
        if (!(scale > 0) || Float.isInfinite(scale)) {
            throw new IllegalArgumentException("an encoding's scale must be positive and finite, got " + scale);
        }
        if (zeroPoint < 0 || zeroPoint > levels(bits)) {
            throw new IllegalArgumentException("zero point " + zeroPoint + " is outside [0, " + levels(bits) + "]");
        }
    }

    static int levels(int bits) {
        return (1 << bits) - 1;
    }

    /** The encoding covering [min, max] (widened to hold 0) at {@code bits}. */
    public static Encoding ofRange(double min, double max, int bits) {
        double lo = Math.min(min, 0);
        double hi = Math.max(max, 0);
        if (!Double.isFinite(lo) || !Double.isFinite(hi)) {
            throw new IllegalArgumentException("a tensor's range must be finite, got [" + min + ", " + max + "]");
        }
        int levels = levels(bits);
        if (hi - lo < 1e-30) {
            hi = lo + 1e-6;
        }
        double scale = (hi - lo) / levels;
        int zero = (int) Math.max(0, Math.min(levels, Math.round(-lo / scale)));
        return new Encoding(bits, (float) scale, zero);
    }

    /** The lowest value the encoding represents. */
    public double min() {
        return -zeroPoint * (double) scale;
    }

    /** The highest value the encoding represents. */
    public double max() {
        return (levels(bits) - zeroPoint) * (double) scale;
    }

    /** The quantized element type: UINT16 or UINT8. */
    public DataType type() {
        return bits == 16 ? DataType.UINT16 : DataType.UINT8;
    }

    public int quantize(float x) {
        long q = Math.round(x / (double) scale) + zeroPoint;
        return (int) Math.max(0, Math.min(levels(bits), q));
    }

    /** {@code x} as the encoding represents it (QuantizeLinear then DequantizeLinear). */
    public float roundTrip(float x) {
        return (quantize(x) - zeroPoint) * scale;
    }

    /** The scale as a scalar float initializer named {@code name}, as QuantizeLinear / DequantizeLinear read it. */
    public TensorProto scaleTensor(String name) {
        return TensorProto.newBuilder().setName(name).setDataType(DataType.FLOAT.getNumber())
                .setRawData(ByteString.copyFrom(ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putFloat(scale).array()))
                .build();
    }

    /** The zero point as a scalar initializer of the quantized type ({@link #type()}) named {@code name}. */
    public TensorProto zeroPointTensor(String name) {
        byte[] raw = bits == 16 ? ByteBuffer.allocate(2).order(ByteOrder.LITTLE_ENDIAN).putShort((short) zeroPoint).array()
                : new byte[]{(byte) zeroPoint};
        return TensorProto.newBuilder().setName(name).setDataType(type().getNumber()).setRawData(ByteString.copyFrom(raw)).build();
    }
}
