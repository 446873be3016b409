package dev.hexforge.checkpoint;

import java.util.Arrays;
import java.util.stream.Collectors;

/** Decoder families Hexforge reads; they share one forward and differ in biases and config defaults. */
public enum Architecture {
    QWEN2("qwen2", "Qwen2ForCausalLM"),
    LLAMA("llama", "LlamaForCausalLM");

    private final String modelType;
    private final String hfClass;

    Architecture(String modelType, String hfClass) {
        this.modelType = modelType;
        this.hfClass = hfClass;
    }

    public String modelType() {
        return modelType;
    }

    public String hfClass() {
        return hfClass;
    }

    public static Architecture fromModelType(String modelType) {
        for (Architecture a : values()) {
            if (a.modelType.equals(modelType)) {
                return a;
            }
        }
        throw new CheckpointException("config.json: model_type '" + modelType + "' is not supported; supported: "
                + Arrays.stream(values()).map(Architecture::modelType).collect(Collectors.joining(", ")));
    }
}
