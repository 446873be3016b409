package dev.hexforge.onnx.lora;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The LoRA inputs fully quantized graphs take, and the values of each adapter they will run with, by input name
 * ({@link LoraInputs#nameA} / {@link LoraInputs#nameB}, every input of every layer): activation calibration runs the
 * text through the base (the inputs at zero) and through each adapter, so every encoding covers them all.
 */
public record LoraCalibration(LoraInputs inputs, List<Map<String, float[]>> adapters) {
    public LoraCalibration {
        adapters = List.copyOf(adapters);
    }

    /** SHA-256 over the inputs' rank and modules and every adapter's values, name by name: what a resumed run must match. */
    public String digest() {
        try {
            MessageDigest md = MessageDigest.getInstance("SHA-256");
            md.update((inputs.rank() + " " + inputs.modules()).getBytes(StandardCharsets.UTF_8));
            for (Map<String, float[]> a : adapters) {
                for (Map.Entry<String, float[]> e : new TreeMap<>(a).entrySet()) {
                    md.update(e.getKey().getBytes(StandardCharsets.UTF_8));
                    ByteBuffer b = ByteBuffer.allocate(e.getValue().length * Float.BYTES).order(ByteOrder.LITTLE_ENDIAN);
                    b.asFloatBuffer().put(e.getValue());
                    md.update(b);
                }
                md.update((byte) 0);
            }
            return HexFormat.of().formatHex(md.digest());
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
