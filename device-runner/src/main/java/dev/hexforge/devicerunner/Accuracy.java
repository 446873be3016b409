package dev.hexforge.devicerunner;

import dev.hexforge.eval.DeviceReference;
import dev.hexforge.eval.Perplexity;
import dev.hexforge.generate.CausalLm;
import dev.hexforge.generate.DecodeSession;

/** How a device's outputs are compared with the host's reference: greedy token agreement and perplexity. */
final class Accuracy {
    private Accuracy() {
    }

    /**
     * Share of the reference continuation the model predicts greedily, teacher-forced (each step is fed the reference
     * token, so one miss does not cascade).
     */
    static double agreement(CausalLm lm, DeviceReference ref) {
        int[] seq = ref.teacherForcedSequence();
        try (DecodeSession s = lm.start(seq.length)) {
            return agreement(s.appendAll(seq), ref, lm.vocabSize());
        }
    }

    /** The same from the logits of every position of {@link DeviceReference#teacherForcedSequence()}. */
    static double agreement(float[][] logits, DeviceReference ref, int vocab) {
        int n = ref.continuation().length;
        if (n == 0) {
            return 1.0;
        }
        int same = 0;
        for (int i = 0; i < n; i++) {
            if (argmax(logits[ref.prompt().length - 1 + i], vocab) == ref.continuation()[i]) {
                same++;
            }
        }
        return (double) same / n;
    }

    static double perplexity(CausalLm lm, DeviceReference ref) {
        return Perplexity.evaluate(lm, ref.perplexityIds(), ref.perplexityWindow(), null).perplexity();
    }

    static int argmax(float[] logits, int vocab) {
        int off = logits.length - vocab;
        int best = 0;
        for (int i = 1; i < vocab; i++) {
            if (logits[off + i] > logits[off + best]) {
                best = i;
            }
        }
        return best;
    }
}
