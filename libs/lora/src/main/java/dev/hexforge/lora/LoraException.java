package dev.hexforge.lora;

/** An adapter that cannot be read or does not fit its base model; the message names the file, module and rule. */
public class LoraException extends RuntimeException {
    public LoraException(String message) {
        super(message);
    }

    public LoraException(String message, Throwable cause) {
        super(message, cause);
    }
}
