package dev.hexforge.compile;

/**
 * A compile that cannot finish, with what the user can do about it: the cause in plain words and the fix (from the
 * QNN error triage when a QNN tool failed).
 */
public final class CompileException extends RuntimeException {
    public static final String DEFAULT_CODE = "COMPILE_FAILED";
    private final String hint;
    private final String code;

    public CompileException(String message, String hint) {
        this(DEFAULT_CODE, message, hint, null);
    }

    public CompileException(String message, String hint, Throwable cause) {
        this(DEFAULT_CODE, message, hint, cause);
    }

    public CompileException(String code, String message, String hint, Throwable cause) {
        super(message, cause);
        this.code = code;
        this.hint = hint;
    }

    /** A code for the failed event: COMPILE_FAILED, or the triage's (QNN_UNSUPPORTED_OP, QNN_DYNAMIC_SHAPE, ...). */
    public String code() {
        return code;
    }

    public String hint() {
        return hint;
    }
}
