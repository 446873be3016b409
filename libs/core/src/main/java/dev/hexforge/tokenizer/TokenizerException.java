package dev.hexforge.tokenizer;

import dev.hexforge.contracts.ErrorCode;
import dev.hexforge.contracts.HexforgeException;

/** A tokenizer folder is missing files or cannot be loaded. */
public class TokenizerException extends HexforgeException {
    public TokenizerException(String message, Throwable cause) {
        super(ErrorCode.MODEL_INVALID, message, cause);
    }

    public TokenizerException(String message) {
        super(ErrorCode.MODEL_INVALID, message);
    }
}
