package dev.hexforge.contracts;

/**
 * Every code a failed stage, job or device task can carry, with the hint a user gets when the failure has no more
 * specific one. Codes travel as their names (the API's {@code error.code}); this is the one list of them.
 */
public enum ErrorCode {
    BAD_REQUEST("fix the job spec and resume the job"),
    INPUT_REFUSED("upload the input and name it by id, or ask the operator to add its folder to hexforge.input-roots"),
    MODEL_INVALID("check config.json, the weights and tokenizer.json of the model folder"),
    WEIGHTS_CORRUPT("re-upload or re-download the model's safetensors files"),
    DATA_INVALID("fix the data file (the message names the line) and resume the job"),
    TRAINING_FAILED("change the finetune settings (a lower learningRate if it diverged) and resume; training continues from "
            + "the last checkpoint when the settings are unchanged"),
    ADAPTER_INVALID("the adapter does not fit the base model; rerun finetune on this model"),
    QUANTIZE_INVALID("fix the quantize settings or the model and resume the job"),
    ACCURACY_GATE("raise quantize.maxDeltaPpl (--max-delta-ppl), use more bits or a smaller group, keep sensitive layers in "
            + "float (quantize.keep), or calibrate with data like your use"),
    EXPORT_FAILED("see the message; the export left nothing behind"),
    COMPILE_FAILED("see the message and the tool's log"),
    QNN_UNSUPPORTED_OP("the HTP backend lacks the operator: keep the layer in float, or export with another opset"),
    QNN_DYNAMIC_SHAPE("compile a static export (export.variant: static)"),
    QNN_OUT_OF_MEMORY("use a shorter context (export.ctx) or split the graph into more parts"),
    QNN_CONTEXT_MISMATCH("compile for the device's SoC and QNN SDK version"),
    QNN_GRAPH_FINALIZE("see the QNN log; a smaller context or another HTP architecture may help"),
    QNN_INVALID_TENSOR("see the QNN log for the tensor"),
    SIGNING_FAILED("check the artifact service's signing key configuration"),
    OUT_OF_MEMORY("use a smaller batch, sequence length or model, or give the service more memory"),
    BACKEND_UNAVAILABLE("run the job on a device that has the backend"),
    BUNDLE_REFUSED("the artifact was changed after signing, or signed by another key: rebuild it"),
    ARTIFACT_UNAVAILABLE("resume the job"),
    STORAGE_UNAVAILABLE("the object store did not answer; resume the job once it is back (readiness: GET /api/v1/ready)"),
    BENCHMARK_FAILED("see the message; resume the job"),
    STAGE_STALLED("resume the job; if it stalls again, check the stage service's health"),
    EVENT_UNPROCESSABLE("resume the job; report it if it persists"),
    INTERNAL("resume the job; report it if it persists");

    private final String hint;

    ErrorCode(String hint) {
        this.hint = hint;
    }

    public String hint() {
        return hint;
    }

    /** A failed stage's error with this code, the message and this code's hint. */
    public StageEvents.StageError error(String message) {
        return new StageEvents.StageError(name(), message, hint);
    }
}
