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
            return ref.agreement(s.appendAll(seq), lm.vocabSize());
        }
    }

    static double perplexity(CausalLm lm, DeviceReference ref) {
        return Perplexity.evaluate(lm, ref.perplexityIds(), ref.perplexityWindow(), null).perplexity();
    }
}
