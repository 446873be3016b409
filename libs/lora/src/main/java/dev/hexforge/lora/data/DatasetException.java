package dev.hexforge.lora.data;

import dev.hexforge.contracts.ErrorCode;
import dev.hexforge.contracts.HexforgeException;

/** A dataset file that cannot be used, with the file, line or index and what is wrong. */
public final class DatasetException extends HexforgeException {
    public DatasetException(String message) {
        super(ErrorCode.DATA_INVALID, message);
    }

    public DatasetException(String message, Throwable cause) {
        super(ErrorCode.DATA_INVALID, message, cause);
    }
}
