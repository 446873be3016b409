package dev.hexforge.contracts;

/**
 * What a fuzz target holds a parser to (as dev.hexforge.testing.Fuzzing does in core, which this module cannot see):
 * outside bytes parse, or are refused with one of the parser's own errors with a message; anything else is a finding.
 */
final class FuzzRule {
    static final String DURATION = "60s";

    private FuzzRule() {
    }

    @SafeVarargs
    static void refusedClearly(Runnable body, Class<? extends Throwable>... refusals) {
        try {
            body.run();
        } catch (Throwable t) {
            for (Class<? extends Throwable> ok : refusals) {
                if (ok.isInstance(t) && t.getMessage() != null && !t.getMessage().isBlank()) {
                    return;
                }
            }
            throw new AssertionError("not a clear refusal: " + t, t);
        }
    }
}
