package dev.hexforge.quant;

import dev.hexforge.contracts.ErrorCode;
import dev.hexforge.contracts.HexforgeException;

/** A quantization request that cannot be carried out as asked; the message says why and what to change. */
public class QuantizationException extends HexforgeException {
    public QuantizationException(String message) {
        super(ErrorCode.QUANTIZE_INVALID, message);
    }
}
