package dev.hexforge.exportservice;

import dev.hexforge.checkpoint.CheckpointException;
import dev.hexforge.contracts.StageEvents.StageError;
import dev.hexforge.onnx.export.ExportException;
import dev.hexforge.safetensors.SafetensorsException;

/** Maps what went wrong in an export to a code, the message, and what the user can do about it. */
final class ErrorTriage {
    private ErrorTriage() {
    }

    static StageError of(Exception e) {
        String msg = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
        if (e instanceof CheckpointException) {
            return new StageError("MODEL_INVALID", msg, "check config.json and the weights of the model folder");
        }
        if (e instanceof SafetensorsException) {
            return new StageError("WEIGHTS_CORRUPT", msg, "re-upload or re-download the model's safetensors files");
        }
        if (e instanceof ExportException) {
            return new StageError("EXPORT_FAILED", msg, "see the message; the export left nothing behind");
        }
        if (e instanceof IllegalArgumentException) {
            return new StageError("BAD_REQUEST", msg, "fix the job spec and resume the job");
        }
        return new StageError("INTERNAL", msg, "retry with resume; report it if it persists");
    }
}
