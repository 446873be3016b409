package dev.hexforge.onnx.export;

import dev.hexforge.contracts.ErrorCode;
import dev.hexforge.contracts.HexforgeException;

/** The export could not be completed; nothing was left in the output folder. */
public class ExportException extends HexforgeException {
    public ExportException(String message) {
        super(ErrorCode.EXPORT_FAILED, message);
    }

    public ExportException(String message, Throwable cause) {
        super(ErrorCode.EXPORT_FAILED, message, cause);
    }
}
