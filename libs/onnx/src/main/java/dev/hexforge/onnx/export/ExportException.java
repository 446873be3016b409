package dev.hexforge.onnx.export;

/** The export could not be completed; nothing was left in the output folder. */
public class ExportException extends RuntimeException {
    public ExportException(String message) {
        super(message);
    }

    public ExportException(String message, Throwable cause) {
        super(message, cause);
    }
}
