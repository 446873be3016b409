package dev.hexforge.signing;

/** A folder or key could not be used for signing (symlinks, unreadable files, unsupported keys). */
public class SigningException extends RuntimeException {
    public SigningException(String message) {
        super(message);
    }

    public SigningException(String message, Throwable cause) {
        super(message, cause);
    }
}
