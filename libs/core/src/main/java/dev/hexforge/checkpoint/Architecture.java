package dev.hexforge.checkpoint;

import java.util.Arrays;
import java.util.stream.Collectors;

/**
 * Decoder families Hexforge reads. They share one forward; what differs is said here once, as the features the
 * passes read from {@link ModelConfig} (q/k/v biases, per-head q/k norms) and the config's defaults.
 */
public enum Architecture {
    /** Qwen2 / Qwen2.5: q/k/v biases always. */
    QWEN2("qwen2", "Qwen2ForCausalLM", 32768, true),
    /** Llama 2 / 3.x: biases only with {@code attention_bias}; Llama 3.x with llama3 RoPE scaling. */
    LLAMA("llama", "LlamaForCausalLM", 2048, false),
    /** Qwen3: no biases by default, an explicit head_dim, and an RMSNorm over head_dim on every q and k head. */
    QWEN3("qwen3", "Qwen3ForCausalLM", 32768, false);

    private final String modelType;
    private final String hfClass;
    private final int defaultMaxPositions;
    private final boolean alwaysAttentionBias;

    Architecture(String modelType, String hfClass, int defaultMaxPositions, boolean alwaysAttentionBias) {
        this.modelType = modelType;
        this.hfClass = hfClass;
        this.defaultMaxPositions = defaultMaxPositions;
        this.alwaysAttentionBias = alwaysAttentionBias;
    }

    /** {@code max_position_embeddings} when a config leaves it out (the family's config class default). */
    int defaultMaxPositions() {
        return defaultMaxPositions;
    }

    /** Whether q/k/v have biases whatever {@code attention_bias} says (Qwen2's modeling code always adds them). */
    boolean alwaysAttentionBias() {
        return alwaysAttentionBias;
    }

    /**
     * {@code head_dim} when a config leaves it out: Qwen3's config class declares 128; the others derive it from the
     * hidden size.
     */
    int defaultHeadDim(int hidden, int heads) {
        return this == QWEN3 ? 128 : heads > 0 ? hidden / heads : 0;
    }

    /** Whether each head of q and k goes through its own RMSNorm ({@code q_norm} / {@code k_norm}) before RoPE. */
    public boolean hasQkNorm() {
        return this == QWEN3;
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
