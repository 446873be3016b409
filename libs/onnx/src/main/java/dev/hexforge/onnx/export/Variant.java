package dev.hexforge.onnx.export;

import java.util.Locale;

/** The graph conventions an export can follow. */
public enum Variant {
    /** Hugging Face / Optimum / onnxruntime-genai: symbolic batch, sequence and past lengths. */
    DYNAMIC,
    /** NPU: every shape fixed; a prompt graph and a token graph over one context length, sharing weights. */
    STATIC,
    /**
     * NPU, in the layout Qualcomm's Genie runtime loads (see {@link GenieIo}): fixed shapes as {@link #STATIC}, the
     * embedding a part of its own, RoPE fed as cos / sin inputs, keys cached transposed, Genie's tensor and graph names.
     */
    GENIE;

    /** Fixed shapes for the NPU (static or genie). */
    public boolean fixedShapes() {
        return this != DYNAMIC;
    }

    public String id() {
        return name().toLowerCase(Locale.ROOT);
    }

    /** "dynamic", "static" or "genie", in any case. */
    public static Variant parse(String s) {
        return switch (s.trim().toLowerCase(Locale.ROOT)) {
            case "dynamic" -> DYNAMIC;
            case "static" -> STATIC;
            case "genie" -> GENIE;
            default -> throw new IllegalArgumentException("variant must be dynamic, static or genie, got '" + s + "'");
        };
    }
}
