package dev.hexforge.compile;

import dev.hexforge.contracts.ErrorCode;
import dev.hexforge.contracts.HexforgeException;

/**
 * A compile that cannot finish, with what the user can do about it: the cause in plain words and the fix (from the
 * QNN error triage when a QNN tool failed), under COMPILE_FAILED or the triage's code (QNN_UNSUPPORTED_OP, ...).
 */
public final class CompileException extends HexforgeException {

    public CompileException(String message, String hint) {
        this(ErrorCode.COMPILE_FAILED, message, hint, null);
    }

    public CompileException(String message, String hint, Throwable cause) {
        this(ErrorCode.COMPILE_FAILED, message, hint, cause);
    }

    public CompileException(ErrorCode code, String message, String hint, Throwable cause) {
        super(code, message, hint, cause);
    }
}
