package dev.hexforge.contracts;

import java.util.List;

/**
 * Limits of the NPU and its runtimes that the job spec's rules and the libraries that build and run the graphs hold
 * alike: the HTP's per-graph weights, the Genie graphs' shapes and Genie's dialog length.
 */
public final class NpuLimits {
    /** The most weights one HTP graph (one context binary's graph) holds, in MiB. */
    public static final int GRAPH_WEIGHT_MB = 2048;
    /** The prompt-graph lengths (AR-N) a Genie export is built with. */
    public static final List<Integer> GENIE_PROMPT_LENGTHS = List.of(64, 128);
    /** The shortest context a Genie export is built for. */
    public static final int GENIE_MIN_CONTEXT = 512;

    private NpuLimits() {
    }

    /**
     * The most tokens one Genie dialog holds, its prompt and what it generates together: the context less one prompt
     * graph's length (CL - AR-N). Genie's prompt graph writes AR-N positions of the cache at a time, so the last AR-N
     * are never free for it, and QAIRT 2.49-2.50's Genie stalls on a dialog that reaches into them.
     */
    public static int genieDialogTokens(int contextLength, int promptGraphLength) {
        return contextLength - promptGraphLength;
    }

    /** {@link #genieDialogTokens} with its figures, for a message. */
    public static String genieDialogLimit(int contextLength, int promptGraphLength) {
        return "Genie's dialog limit of " + genieDialogTokens(contextLength, promptGraphLength) + " tokens (context "
                + contextLength + " - prompt graph AR-" + promptGraphLength + ")";
    }
}
