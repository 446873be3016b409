package dev.hexforge.devicerunner;

/** A bundle the runner will not load: unsigned, signed by another key, or changed after signing. */
public final class BundleRefusedException extends RuntimeException {
    public BundleRefusedException(String message, Throwable cause) {
        super(message, cause);
    }
}
