package dev.hexforge.safetensors;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.ShortBuffer;

/** Conversions between float32 and the 16-bit float formats, and bulk decoding of tensor bytes. */
public final class FloatConversion {
    private FloatConversion() {
    }

    public static float[] toFloats(ByteBuffer src, DType dtype, int count, String what) {
        ByteBuffer b = src.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        float[] out = new float[count];
        switch (dtype) {
            case F32 -> b.asFloatBuffer().get(out);
            case F64 -> {
                for (int i = 0; i < count; i++) {
                    out[i] = (float) b.getDouble(i * 8);
                }
            }
            case BF16 -> {
                // bulk reads in chunks: far faster than one getShort per value on a mapped buffer
                ShortBuffer shorts = b.asShortBuffer();
                short[] chunk = new short[Math.min(count, 1 << 16)];
                for (int base = 0; base < count; base += chunk.length) {
                    int n = Math.min(chunk.length, count - base);
                    shorts.get(chunk, 0, n);
                    for (int i = 0; i < n; i++) {
                        out[base + i] = Float.intBitsToFloat((chunk[i] & 0xffff) << 16);
                    }
                }
            }
            case F16 -> {
                for (int i = 0; i < count; i++) {
                    out[i] = f16ToFloat(b.getShort(i * 2));
                }
            }
            default -> throw new SafetensorsException(what + ": dtype " + dtype + " is not a float type");
        }
        return out;
    }

    public static float bf16ToFloat(short bits) {
        return Float.intBitsToFloat((bits & 0xffff) << 16);
    }

    /** Round to nearest even, as PyTorch does when casting to bfloat16; NaN stays NaN. */
    public static short floatToBf16(float f) {
        int bits = Float.floatToRawIntBits(f);
        if (Float.isNaN(f)) {
            return (short) ((bits >>> 16) | 0x40);
        }
        int rounding = 0x7fff + ((bits >>> 16) & 1);
        return (short) ((bits + rounding) >>> 16);
    }

    public static float f16ToFloat(short h) {
        int bits = h & 0xffff;
        int sign = (bits & 0x8000) << 16;
        int exp = (bits >>> 10) & 0x1f;
        int mant = bits & 0x3ff;
        if (exp == 0x1f) {
            return Float.intBitsToFloat(sign | 0x7f800000 | (mant << 13));
        }
        if (exp == 0) {
            if (mant == 0) {
                return Float.intBitsToFloat(sign);
            }
            float v = mant / 1024f / 16384f; // subnormal: mant * 2^-24
            return sign != 0 ? -v : v;
        }
        return Float.intBitsToFloat(sign | ((exp + 112) << 23) | (mant << 13));
    }

    /** Round to nearest even; overflow goes to infinity. */
    public static short floatToF16(float f) {
        int bits = Float.floatToRawIntBits(f);
        int sign = (bits >>> 16) & 0x8000;
        int exp = (bits >>> 23) & 0xff;
        int mant = bits & 0x7fffff;
        if (exp == 0xff) {
            return (short) (sign | 0x7c00 | (mant != 0 ? 0x200 : 0));
        }
        int e = exp - 127 + 15;
        if (e >= 0x1f) {
            return (short) (sign | 0x7c00);
        }
        if (e <= 0) {
            if (e < -10) {
                return (short) sign;
            }
            mant |= 0x800000;
            int shift = 14 - e;
            int half = 1 << (shift - 1);
            int rounded = (mant + half - 1 + ((mant >>> shift) & 1)) >>> shift;
            return (short) (sign | rounded);
        }
        int rounded = mant + 0xfff + ((mant >>> 13) & 1);
        if ((rounded & 0x800000) != 0) {
            rounded = 0;
            e++;
            if (e >= 0x1f) {
                return (short) (sign | 0x7c00);
            }
        }
        return (short) (sign | (e << 10) | (rounded >>> 13));
    }
}
