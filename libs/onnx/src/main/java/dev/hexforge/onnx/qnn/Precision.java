package dev.hexforge.onnx.qnn;

import java.util.Arrays;
import java.util.Locale;
import java.util.stream.Collectors;

/**
 * What an NPU graph computes in, named as Qualcomm AI Hub names it: weight bits and activation bits. The HTP runs
 * quantized graphs; a graph whose activations stay float is run by it in fp16 with every weight widened to 16 bits,
 * or fails to load where CPU fallback is disabled (the ort-qnn bundle).
 */
public enum Precision {
    /** 8-bit weights, 16-bit activations. */
    W8A16("w8a16", 16),
    /** 4-bit weights, 16-bit activations. */
    W4A16("w4a16", 16),
    /** 8-bit weights and activations. */
    W8A8("w8a8", 8),
    /** 4-bit weights and 8-bit activations. */
    W4A8("w4a8", 8),
    /** 8-bit weights only: float activations. */
    W8("w8", 0),
    /** 4-bit weights only: float activations. */
    W4("w4", 0);

    private final String id;
    private final int activationBits;

    Precision(String id, int activationBits) {
        this.id = id;
        this.activationBits = activationBits;
    }

    public String id() {
        return id;
    }

    /** 16 or 8; 0 when activations stay float. */
    public int activationBits() {
        return activationBits;
    }

    /** Whether every activation must be quantized (a Q / DQ pair) for the HTP to run the graph as built. */
    public boolean quantizesActivations() {
        return activationBits > 0;
    }

    /** The precision an export records ({@code export.json}'s {@code precision}); null for float or an export made before it. */
    public static Precision recorded(String id) {
        return id == null || id.equals("float") ? null : parse(id);
    }

    public static Precision parse(String id) {
        for (Precision p : values()) {
            if (p.id.equals(id.toLowerCase(Locale.ROOT))) {
                return p;
            }
        }
        throw new IllegalArgumentException("unknown precision '" + id + "'; choose one of "
                + Arrays.stream(values()).map(Precision::id).collect(Collectors.joining(", ")));
    }
}
