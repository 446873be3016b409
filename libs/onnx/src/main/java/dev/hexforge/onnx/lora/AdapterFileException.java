package dev.hexforge.onnx.lora;

import dev.hexforge.contracts.ErrorCode;
import dev.hexforge.contracts.HexforgeException;

/** An adapter file that is not one, or that does not fit the graphs it is run with; the message names the file and why. */
public class AdapterFileException extends HexforgeException {
    public AdapterFileException(String message) {
        super(ErrorCode.ADAPTER_INVALID, message);
    }

    public AdapterFileException(String message, Throwable cause) {
        super(ErrorCode.ADAPTER_INVALID, message, cause);
    }
}
