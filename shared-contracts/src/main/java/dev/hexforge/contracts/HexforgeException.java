package dev.hexforge.contracts;

/**
 * The base of the libraries' exceptions: a failure a user can act on, with its {@link ErrorCode} and a hint (the
 * code's own unless the thrower knows better). A stage turns one into its failed event as it is; anything else
 * that escapes a pass is INTERNAL and logged with its stack trace.
 */
public class HexforgeException extends RuntimeException {
    private final ErrorCode code;
    private final String hint;

    public HexforgeException(ErrorCode code, String message) {
        this(code, message, null, null);
    }

    public HexforgeException(ErrorCode code, String message, Throwable cause) {
        this(code, message, null, cause);
    }

    public HexforgeException(ErrorCode code, String message, String hint, Throwable cause) {
        super(message, cause);
        this.code = code;
        this.hint = hint == null ? code.hint() : hint;
    }

    public ErrorCode code() {
        return code;
    }

    public String hint() {
        return hint;
    }

    public StageEvents.StageError error() {
        return new StageEvents.StageError(code.name(), getMessage() == null ? getClass().getSimpleName() : getMessage(), hint);
    }
}
