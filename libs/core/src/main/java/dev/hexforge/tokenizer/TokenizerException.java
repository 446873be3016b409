package dev.hexforge.tokenizer;

/** A tokenizer folder is missing files or cannot be loaded. */
public class TokenizerException extends RuntimeException {
    public TokenizerException(String message, Throwable cause) {
        super(message, cause);
    }

    public TokenizerException(String message) {
        super(message);
    }
}
