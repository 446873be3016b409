package dev.hexforge.lora;

import dev.hexforge.contracts.ErrorCode;
import dev.hexforge.contracts.HexforgeException;

/** An adapter that cannot be read or does not fit its base model; the message names the file, module and rule. */
public class LoraException extends HexforgeException {
    public LoraException(String message) {
        super(ErrorCode.ADAPTER_INVALID, message);
    }

    public LoraException(String message, Throwable cause) {
        super(ErrorCode.ADAPTER_INVALID, message, cause);
    }
}
