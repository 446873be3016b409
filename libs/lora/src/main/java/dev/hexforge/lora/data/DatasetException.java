package dev.hexforge.lora.data;

/** A dataset file that cannot be used, with the file, line or index and what is wrong. */
public final class DatasetException extends RuntimeException {
    public DatasetException(String message) {
        super(message);
    }

    public DatasetException(String message, Throwable cause) {
        super(message, cause);
    }
}
