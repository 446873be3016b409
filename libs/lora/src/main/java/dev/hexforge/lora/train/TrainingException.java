package dev.hexforge.lora.train;

/** A training run that cannot start or go on, with what the user can do about it. */
public final class TrainingException extends RuntimeException {
    public TrainingException(String message) {
        super(message);
    }

    public TrainingException(String message, Throwable cause) {
        super(message, cause);
    }
}
