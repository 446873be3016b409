package dev.hexforge.safetensors;

import java.util.Locale;

/** Element types of the safetensors format, with their size in bytes. */
public enum DType {
    BOOL(1), U8(1), I8(1), F8_E5M2(1), F8_E4M3(1),
    I16(2), U16(2), F16(2), BF16(2),
    I32(4), U32(4), F32(4),
    F64(8), I64(8), U64(8);

    private final int bytes;

    DType(int bytes) {
        this.bytes = bytes;
    }

    public int bytes() {
        return bytes;
    }

    /** Parses a header dtype string; null when the format has no such type. */
    public static DType parse(String name) {
        if (name == null) {
            return null;
        }
        try {
            return valueOf(name.toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            return null;
        }
    }
}
