package dev.hexforge.safetensors;

/** A safetensors file (or sharded checkpoint) broke a rule of the format; the message names file, tensor and rule. */
public class SafetensorsException extends RuntimeException {
    public SafetensorsException(String message) {
        super(message);
    }

    public SafetensorsException(String message, Throwable cause) {
        super(message, cause);
    }
}
