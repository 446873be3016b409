package dev.hexforge.onnx.qdq;

import java.util.Locale;

/**
 * How a static graph's activations are stored: {@code bits} for every activation (16 or 8; 0 keeps them float, the
 * weight-only graph), {@code kvBits} for the KV cache entries (8 or 16). The precision users name, {@code w4a16} and the
 * like, is the weights' bits with these. {@code quantizedIo}: the graphs' inputs and outputs themselves in their
 * quantized types (AI Hub's {@code --quantize_io}, see {@link QuantizedIo}); needs quantized activations.
 */
public record Activations(int bits, int kvBits, boolean quantizedIo) {
    public static final Activations FLOAT = new Activations(0, 0);
    public static final int DEFAULT_KV_BITS = 8;

    public Activations {
        if (bits != 0 && bits != 8 && bits != 16) {
            throw new IllegalArgumentException("activations are 16, 8 or float, got " + bits + " bits");
        }
        if (bits != 0 && kvBits != 8 && kvBits != 16) {
            throw new IllegalArgumentException("the KV cache is 8 or 16 bits, got " + kvBits);
        }
        if (bits == 0 && quantizedIo) {
            throw new IllegalArgumentException("quantized inputs and outputs need quantized activations, not float");
        }
        if (bits == 0) {
            kvBits = 0;
        }
    }

    public Activations(int bits, int kvBits) {
        this(bits, kvBits, false);
    }

    /** These settings with the graphs' inputs and outputs quantized or not. */
    public Activations withQuantizedIo(boolean io) {
        return new Activations(bits, kvBits, io);
    }

    public boolean quantized() {
        return bits > 0;
    }

    /**
     * {@code "16"}, {@code "8"} or {@code "float"}, with the cache's bits; {@code auto} (null or "auto") is 16 for a
     * static export and float for a dynamic one.
     */
    public static Activations parse(String activations, Integer kvBits, boolean staticExport) {
        String a = activations == null ? "auto" : activations.trim().toLowerCase(Locale.ROOT);
        int kv = kvBits == null ? DEFAULT_KV_BITS : kvBits;
        return switch (a) {
            case "auto" -> staticExport ? new Activations(16, kv) : FLOAT;
            case "16" -> new Activations(16, kv);
            case "8" -> new Activations(8, kv);
            case "float" -> FLOAT;
            default -> throw new IllegalArgumentException("activations must be 16, 8 or float, got '" + activations + "'");
        };
    }

    /** The precision as AI Hub names it for weights of {@code weightBits}: w8a16, w4a16, w8a8, or w4 (weights only). */
    public String precision(int weightBits) {
        return "w" + weightBits + (bits == 0 ? "" : "a" + bits);
    }

    /** As {@link #parse}'s input: "16", "8" or "float". */
    public String id() {
        return bits == 0 ? "float" : Integer.toString(bits);
    }
}
