package dev.hexforge.eval;

import dev.hexforge.generate.CausalLm;
import dev.hexforge.generate.DecodeSession;

import java.util.function.IntConsumer;

/**
 * Perplexity under the fixture protocol: non-overlapping windows of {@code window} tokens from position 0 (the
 * trailing remainder is dropped), each run in a fresh context, tokens 1..window-1 scored with log-softmax in
 * float64 over the float32 logits, {@code exp(mean NLL)}.
 */
public final class Perplexity {

    public record Result(double perplexity, double meanNll, long scoredTokens, int windows, int droppedTrailingTokens) {
    }

    private Perplexity() {
    }

    /**
     * A perplexity and the model's top-1 token at every scored position (position t of a window predicts token t + 1),
     * window after window: what the accuracy gate compares between a float and a quantized model.
     */
    public record Scored(Result result, int[] top1) {
        /** The fraction of positions where this and {@code other}, scored on the same windows, predict the same token. */
        public double agreement(Scored other) {
            if (top1.length != other.top1.length) {
                throw new IllegalArgumentException("scored on different windows: " + top1.length + " vs " + other.top1.length + " positions");
            }
            int same = 0;
            for (int i = 0; i < top1.length; i++) {
                same += top1[i] == other.top1[i] ? 1 : 0;
            }
            return top1.length == 0 ? 1 : (double) same / top1.length;
        }
    }

    /** @param onWindow called with the number of windows done, for progress; may be null */
    public static Result evaluate(CausalLm model, int[] ids, int window, IntConsumer onWindow) {
        return score(model, ids, window, onWindow).result();
    }

    /** {@link #evaluate}, with the top-1 token of every scored position. */
    public static Scored score(CausalLm model, int[] ids, int window, IntConsumer onWindow) {
        if (window < 2) {
            throw new IllegalArgumentException("window must be at least 2 tokens");
        }
        if (window > model.maxContext()) {
            throw new IllegalArgumentException("window " + window + " exceeds the model's context " + model.maxContext());
        }
        int windows = ids.length / window;
        if (windows == 0) {
            throw new IllegalArgumentException("the text has " + ids.length + " tokens, fewer than one window of " + window);
        }
        Windows scored = new Windows(windows, window);
        int[] chunk = new int[window];
        for (int w = 0; w < windows; w++) {
            System.arraycopy(ids, w * window, chunk, 0, window);
            try (DecodeSession s = model.start(window)) {
                scored.add(s.appendAll(chunk), chunk);
            }
            if (onWindow != null) {
                onWindow.accept(w + 1);
            }
        }
        return scored.result(ids.length - windows * window);
    }

    /**
     * Windows scored one at a time, in order, from their logits (each a fresh context): for a caller that runs the
     * windows itself, as a model scored a part at a time does.
     */
    public static final class Windows {
        private final int window;
        private final int[] top1;
        private double nll;
        private int scored;
        private int windows;

        public Windows(int windows, int window) {
            this.window = window;
            this.top1 = new int[windows * (window - 1)];
        }

        /** The next window's tokens and the logits of its positions. */
        public void add(float[][] logits, int[] tokens) {
            if (tokens.length != window) {
                throw new IllegalArgumentException("a window of " + tokens.length + " tokens, not " + window);
            }
            nll += windowNll(logits, tokens);
            for (int t = 0; t + 1 < window; t++) {
                top1[scored + t] = argmax(logits[t]);
            }
            scored += window - 1;
            windows++;
        }

        /** @param dropped the text's trailing tokens that filled no window */
        public Scored result(int dropped) {
            if (scored != top1.length) {
                throw new IllegalStateException(windows + " windows scored of " + top1.length / (window - 1));
            }
            double mean = nll / scored;
            return new Scored(new Result(Math.exp(mean), mean, scored, windows, dropped), top1);
        }
    }

    static int argmax(float[] logits) {
        int best = 0;
        for (int i = 1; i < logits.length; i++) {
            if (logits[i] > logits[best]) {
                best = i;
            }
        }
        return best;
    }

    /** Summed NLL of tokens 1..n-1 of a window, from the logits of its positions 0..n-2 (a fresh context per window). */
    public static double windowNll(float[][] logits, int[] window) {
        double nll = 0;
        for (int t = 0; t + 1 < window.length; t++) {
            nll += negativeLogLikelihood(logits[t], window[t + 1]);
        }
        return nll;
    }

    public static double negativeLogLikelihood(float[] logits, int target) {
        double max = Double.NEGATIVE_INFINITY;
        for (float v : logits) {
            max = Math.max(max, v);
        }
        double sum = 0;
        for (float v : logits) {
            sum += Math.exp(v - max);
        }
        return -(logits[target] - max - Math.log(sum));
    }
}
