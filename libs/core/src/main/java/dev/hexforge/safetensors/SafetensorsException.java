package dev.hexforge.safetensors;

import dev.hexforge.contracts.ErrorCode;
import dev.hexforge.contracts.HexforgeException;

/** A safetensors file (or sharded checkpoint) broke a rule of the format; the message names file, tensor and rule. */
public class SafetensorsException extends HexforgeException {
    public SafetensorsException(String message) {
        super(ErrorCode.WEIGHTS_CORRUPT, message);
    }

    public SafetensorsException(String message, Throwable cause) {
        super(ErrorCode.WEIGHTS_CORRUPT, message, cause);
    }
}
