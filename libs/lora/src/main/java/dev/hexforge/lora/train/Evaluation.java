package dev.hexforge.lora.train;

import dev.hexforge.forward.DecoderForward;
import dev.hexforge.forward.DecoderWeights;
import dev.hexforge.generate.Generator;
import dev.hexforge.lora.LoraAdapter;
import dev.hexforge.lora.data.EncodedExample;
import dev.hexforge.tokenizer.Tokenizer;

import java.util.Arrays;
import java.util.List;
import java.util.Set;

/**
 * Eval metrics as the reference run defines them: the mean NLL over every target token (teacher forcing), and
 * greedy exact match: decode from the prompt until {@code <|im_end|>} (excluded) or the token limit; correct when
 * the decoded text equals the expected response exactly.
 */
public final class Evaluation {
    private static final int BATCH = 16;

    private Evaluation() {
    }

    public static double loss(LoraTrainingModel<?> model, List<EncodedExample> examples) {
        double sum = 0;
        long n = 0;
        for (int i = 0; i < examples.size(); i += BATCH) {
            List<TrainingExample> batch = examples.subList(i, Math.min(examples.size(), i + BATCH)).stream()
                    .map(EncodedExample::example).toList();
            LoraTrainingModel.Loss l = model.loss(batch);
            sum += l.sum();
            n += l.tokens();
        }
        return n == 0 ? Double.NaN : sum / n;
    }

    /** Fraction of examples with an expected response that the model reproduces exactly; NaN when there are none. */
    public static double exactMatch(DecoderWeights base, LoraAdapter adapter, Tokenizer tokenizer,
                                    List<EncodedExample> examples, int maxNewTokens) {
        DecoderForward model = new DecoderForward(adapter.applyTo(base));
        int[] end = tokenizer.encode(tokenizer.chatTemplate().endOfTurn());
        Set<Integer> stop = end.length == 1 ? Set.of(end[0]) : Set.of();
        Generator.Options opt = new Generator.Options(maxNewTokens, true, 1.0, 0, 1.0, 0, stop);
        int scored = 0;
        int correct = 0;
        for (EncodedExample e : examples) {
            if (e.expected() == null) {
                continue;
            }
            int[] prompt = Arrays.copyOf(e.example().tokens(), e.promptLength());
            if (prompt.length == 0 || prompt.length + maxNewTokens > model.maxContext()) {
                continue;
            }
            int[] out = Generator.generate(model, prompt, opt, null);
            if (out.length > 0 && stop.contains(out[out.length - 1])) {
                out = Arrays.copyOf(out, out.length - 1);
            }
            scored++;
            if (tokenizer.decode(out).equals(e.expected())) {
                correct++;
            }
        }
        return scored == 0 ? Double.NaN : (double) correct / scored;
    }
}
