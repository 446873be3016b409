package dev.hexforge.onnx.runtime;

/** ONNX Runtime refused to load or run a model. */
public class OnnxRuntimeException extends RuntimeException {
    public OnnxRuntimeException(String message, Throwable cause) {
        super(message, cause);
    }

    public OnnxRuntimeException(String message) {
        super(message);
    }
}
