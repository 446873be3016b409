package dev.hexforge.lora.train;

import dev.hexforge.contracts.ErrorCode;
import dev.hexforge.contracts.HexforgeException;

/** A training run that cannot start or go on, with what the user can do about it. */
public final class TrainingException extends HexforgeException {
    public TrainingException(String message) {
        super(ErrorCode.TRAINING_FAILED, message);
    }

    public TrainingException(String message, Throwable cause) {
        super(ErrorCode.TRAINING_FAILED, message, cause);
    }
}
