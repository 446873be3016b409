package dev.hexforge.generate;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import java.util.Set;
import java.util.function.IntConsumer;

/** Greedy or sampled decoding over any {@link CausalLm}. */
public final class Generator {

    /**
     * @param stopIds    generation ends after producing one of these (it is included in the output); empty for none
     * @param greedy     argmax (ties to the lowest id); otherwise temperature / top-k / top-p sampling
     */
    public record Options(int maxNewTokens, boolean greedy, double temperature, int topK, double topP, long seed,
                          Set<Integer> stopIds) {
        public Options {
            if (maxNewTokens < 0) {
                throw new IllegalArgumentException("maxNewTokens must be >= 0");
            }
            if (!greedy && !(temperature > 0)) {
                throw new IllegalArgumentException("temperature must be > 0 when sampling");
            }
            if (topP <= 0 || topP > 1) {
                throw new IllegalArgumentException("top_p must be in (0, 1]");
            }
            stopIds = Set.copyOf(stopIds);
        }

        public static Options greedy(int maxNewTokens) {
            return new Options(maxNewTokens, true, 1.0, 0, 1.0, 0, Set.of());
        }
    }

    private Generator() {
    }

    public static int[] generate(CausalLm model, int[] prompt, Options opt, IntConsumer onToken) {
        if (prompt.length == 0) {
            throw new IllegalArgumentException("the prompt has no tokens");
        }
        int capacity = prompt.length + opt.maxNewTokens();
        if (capacity > model.maxContext()) {
            throw new IllegalArgumentException("prompt (" + prompt.length + ") + max new tokens (" + opt.maxNewTokens()
                    + ") exceed " + model.contextLimit());
        }
        List<Integer> out = new ArrayList<>();
        SplittableRandom rng = new SplittableRandom(opt.seed());
        try (DecodeSession s = model.start(capacity)) {
            float[] logits = s.append(prompt);
            for (int i = 0; i < opt.maxNewTokens(); i++) {
                int next = opt.greedy() ? argmax(logits) : sample(logits, opt, rng);
                out.add(next);
                if (onToken != null) {
                    onToken.accept(next);
                }
                if (opt.stopIds().contains(next) || i == opt.maxNewTokens() - 1) {
                    break;
                }
                logits = s.append(new int[]{next});
            }
        }
        return out.stream().mapToInt(Integer::intValue).toArray();
    }

    /** Index of the largest value; ties go to the lowest index. */
    public static int argmax(float[] v) {
        int best = 0;
        for (int i = 1; i < v.length; i++) {
            if (v[i] > v[best]) {
                best = i;
            }
        }
        return best;
    }

    static int sample(float[] logits, Options opt, SplittableRandom rng) {
        int n = logits.length;
        Integer[] order = new Integer[n];
        for (int i = 0; i < n; i++) {
            order[i] = i;
        }
        Arrays.sort(order, (a, b) -> Float.compare(logits[b], logits[a]));
        int k = opt.topK() > 0 ? Math.min(opt.topK(), n) : n;
        double max = logits[order[0]] / opt.temperature();
        double[] p = new double[k];
        double sum = 0;
        for (int i = 0; i < k; i++) {
            p[i] = Math.exp(logits[order[i]] / opt.temperature() - max);
            sum += p[i];
        }
        int keep = k;
        double cumulative = 0;
        for (int i = 0; i < k; i++) {
            cumulative += p[i] / sum;
            if (cumulative >= opt.topP()) {
                keep = i + 1;
                break;
            }
        }
        double total = 0;
        for (int i = 0; i < keep; i++) {
            total += p[i];
        }
        double r = rng.nextDouble() * total;
        for (int i = 0; i < keep; i++) {
            r -= p[i];
            if (r <= 0) {
                return order[i];
            }
        }
        return order[keep - 1];
    }
}
