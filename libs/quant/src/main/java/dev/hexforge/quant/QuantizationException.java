package dev.hexforge.quant;

/** A quantization request that cannot be carried out as asked; the message says why and what to change. */
public class QuantizationException extends RuntimeException {
    public QuantizationException(String message) {
        super(message);
    }
}
