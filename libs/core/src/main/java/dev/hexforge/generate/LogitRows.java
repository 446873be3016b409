package dev.hexforge.generate;

/** Which positions of an appended run a model returns logits for. */
public enum LogitRows {
    /** Every appended position: scoring (perplexity, agreement, the accuracy gate). */
    ALL,
    /**
     * The last appended position only: generation, which never reads the others, so a prompt skips the LM head for
     * all but its last token. A model that honours it (its {@link CausalLm#logitRows()} says LAST; static NPU graphs
     * and older exports do not) refuses {@link DecodeSession#appendAll} with more than one id.
     */
    LAST
}
