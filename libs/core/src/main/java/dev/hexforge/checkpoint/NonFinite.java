package dev.hexforge.checkpoint;

/**
 * What a pass does with a checkpoint whose weights hold NaN or Inf values: refuse it naming the tensors (the
 * default: such a model computes NaN, and its export would ship a broken artifact), or go on, saying so in its
 * warnings, for an expert who asked ({@code allowNonFinite} in the job spec, {@code --allow-non-finite} on the CLI).
 */
public enum NonFinite {
    REFUSE, ALLOW;

    public static NonFinite allowedIf(boolean allow) {
        return allow ? ALLOW : REFUSE;
    }
}
