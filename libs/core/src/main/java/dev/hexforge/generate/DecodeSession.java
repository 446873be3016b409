package dev.hexforge.generate;

/** One growing sequence with its KV cache. */
public interface DecodeSession extends AutoCloseable {

    /**
     * Appends tokens and returns the logits of every appended position, [ids.length][vocab]; a model whose
     * {@link CausalLm#logitRows()} is {@link LogitRows#LAST} refuses more than one id here, and its row may be the
     * session's own buffer, as in {@link #append}.
     */
    float[][] appendAll(int[] ids);

    /**
     * Appends tokens and returns the logits of the last one. A model opened with {@link LogitRows#LAST} returns the
     * session's own buffer, overwritten by the next call: copy it to keep it.
     */
    default float[] append(int[] ids) {
        float[][] all = appendAll(ids);
        return all[all.length - 1];
    }

    /** Tokens held so far. */
    int length();

    @Override
    default void close() {
    }
}
