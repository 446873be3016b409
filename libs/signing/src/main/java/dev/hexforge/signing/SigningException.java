package dev.hexforge.signing;

import dev.hexforge.contracts.ErrorCode;
import dev.hexforge.contracts.HexforgeException;

/** A folder or key could not be used for signing (symlinks, unreadable files, unsupported keys). */
public class SigningException extends HexforgeException {
    public SigningException(String message) {
        super(ErrorCode.SIGNING_FAILED, message);
    }

    public SigningException(String message, Throwable cause) {
        super(ErrorCode.SIGNING_FAILED, message, cause);
    }
}
