package dev.hexforge.generate;

/** A causal language model that can be run token by token: the Java forward or an ONNX Runtime session. */
public interface CausalLm extends AutoCloseable {

    int vocabSize();

    /** The longest sequence one session can hold. */
    int maxContext();

    /** {@link #maxContext} as a message names it, with what decides it. */
    default String contextLimit() {
        return "the model's context of " + maxContext();
    }

    /** The positions whose logits {@link DecodeSession#appendAll} returns: every one unless opened to generate only. */
    default LogitRows logitRows() {
        return LogitRows.ALL;
    }

    /** A fresh context with room for {@code capacity} tokens. */
    DecodeSession start(int capacity);

    @Override
    default void close() {
    }
}
