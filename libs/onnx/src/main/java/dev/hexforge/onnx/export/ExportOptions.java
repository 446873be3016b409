package dev.hexforge.onnx.export;

import dev.hexforge.onnx.qnn.QnnPreflight;

/**
 * @param promptLength  tokens per run of the static prompt graph
 * @param contextLength KV positions the static graphs attend over (past + new)
 * @param opset         ONNX opset of the default domain (17 or higher)
 * @param maxGraphBytes static graphs whose weights would exceed this are split by layers into parts (the NPU's
 *                      per-graph limit, 2 GB, unless a test asks for less)
 */
public record ExportOptions(Variant variant, int promptLength, int contextLength, int opset, long maxGraphBytes) {
    public static final int DEFAULT_PROMPT_LENGTH = 128;
    public static final int DEFAULT_CONTEXT_LENGTH = 512;
    public static final int MAX_CONTEXT_LENGTH = 4096;
    public static final int DEFAULT_OPSET = 17;

    public ExportOptions(Variant variant, int promptLength, int contextLength, int opset) {
        this(variant, promptLength, contextLength, opset, QnnPreflight.GRAPH_WEIGHT_LIMIT_BYTES);
    }

    public ExportOptions {
        if (maxGraphBytes < 1) {
            throw new IllegalArgumentException("the per-graph weight limit must be positive, got " + maxGraphBytes);
        }
        if (opset < 17 || opset > 21) {
            throw new IllegalArgumentException("opset must be between 17 and 21, got " + opset);
        }
        if (variant.fixedShapes()) {
            if (contextLength < 2 || contextLength > MAX_CONTEXT_LENGTH) {
                throw new IllegalArgumentException("context length must be between 2 and " + MAX_CONTEXT_LENGTH + ", got " + contextLength);
            }
            if (promptLength < 1 || promptLength >= contextLength) {
                throw new IllegalArgumentException("prompt length must be between 1 and context length - 1 ("
                        + (contextLength - 1) + "), got " + promptLength);
            }
        }
        if (variant == Variant.GENIE) {
            if (!GenieIo.PROMPT_LENGTHS.contains(promptLength)) {
                throw new IllegalArgumentException("a Genie export's prompt length (AR-N) must be one of " + GenieIo.PROMPT_LENGTHS
                        + ", got " + promptLength);
            }
            if (contextLength < GenieIo.MIN_CONTEXT) {
                throw new IllegalArgumentException("a Genie export's context length must be between " + GenieIo.MIN_CONTEXT + " and "
                        + MAX_CONTEXT_LENGTH + ", got " + contextLength);
            }
        }
    }

    public static ExportOptions dynamic() {
        return new ExportOptions(Variant.DYNAMIC, DEFAULT_PROMPT_LENGTH, DEFAULT_CONTEXT_LENGTH, DEFAULT_OPSET);
    }

    public static ExportOptions staticShapes(int promptLength, int contextLength) {
        return new ExportOptions(Variant.STATIC, promptLength, contextLength, DEFAULT_OPSET);
    }
}
