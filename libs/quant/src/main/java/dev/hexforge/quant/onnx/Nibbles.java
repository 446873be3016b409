package dev.hexforge.quant.onnx;

/** Packs 4-bit values two to a byte, the first in the low nibble (ONNX INT4/UINT4 and MatMulNBits layout). */
final class Nibbles {
    private Nibbles() {
    }

    static byte[] pack(byte[] values) {
        byte[] out = new byte[(values.length + 1) / 2];
        for (int i = 0; i < values.length; i += 2) {
            int lo = values[i] & 0x0f;
            int hi = i + 1 < values.length ? values[i + 1] & 0x0f : 0;
            out[i >> 1] = (byte) (lo | hi << 4);
        }
        return out;
    }

    static byte[] pack(int[] values) {
        byte[] out = new byte[(values.length + 1) / 2];
        for (int i = 0; i < values.length; i++) {
            int v = values[i] & 0x0f;
            out[i / 2] |= (byte) ((i & 1) == 0 ? v : v << 4);
        }
        return out;
    }
}
