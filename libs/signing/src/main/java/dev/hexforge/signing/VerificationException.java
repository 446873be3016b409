package dev.hexforge.signing;

/** A model folder failed verification; the message says which check failed and on what. */
public class VerificationException extends RuntimeException {
    public VerificationException(String message) {
        super(message);
    }

    public VerificationException(String message, Throwable cause) {
        super(message, cause);
    }
}
