package dev.hexforge.checkpoint;

import dev.hexforge.contracts.ErrorCode;
import dev.hexforge.contracts.HexforgeException;

/** A checkpoint folder cannot be used: unsupported architecture, bad config, or weights that disagree with it. */
public class CheckpointException extends HexforgeException {
    public CheckpointException(String message) {
        super(ErrorCode.MODEL_INVALID, message);
    }

    public CheckpointException(String message, Throwable cause) {
        super(ErrorCode.MODEL_INVALID, message, cause);
    }
}
