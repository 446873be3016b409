package dev.hexforge.devicerunner.adb;

/** adb, or a command run through it on the phone, failed; the message carries what it printed. */
public final class AdbException extends RuntimeException {
    public AdbException(String message) {
        super(message);
    }

    public AdbException(String message, Throwable cause) {
        super(message, cause);
    }
}
