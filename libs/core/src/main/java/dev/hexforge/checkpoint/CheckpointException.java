package dev.hexforge.checkpoint;

/** A checkpoint folder cannot be used: unsupported architecture, bad config, or weights that disagree with it. */
public class CheckpointException extends RuntimeException {
    public CheckpointException(String message) {
        super(message);
    }

    public CheckpointException(String message, Throwable cause) {
        super(message, cause);
    }
}
