package dev.hexforge.onnx.export;

/** The two graph conventions an export can follow. */
public enum Variant {
    /** Hugging Face / Optimum / onnxruntime-genai: symbolic batch, sequence and past lengths. */
    DYNAMIC,
    /** NPU: every shape fixed; a prompt graph and a token graph over one context length, sharing weights. */
    STATIC;

    /** "dynamic" or "static", in any case. */
    public static Variant parse(String s) {
        return switch (s.trim().toLowerCase(java.util.Locale.ROOT)) {
            case "dynamic" -> DYNAMIC;
            case "static" -> STATIC;
            default -> throw new IllegalArgumentException("variant must be dynamic or static, got '" + s + "'");
        };
    }
}
