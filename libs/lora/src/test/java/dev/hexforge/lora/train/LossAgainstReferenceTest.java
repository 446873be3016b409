package dev.hexforge.lora.train;

import dev.hexforge.kernels.Kernels;
import dev.hexforge.checkpoint.Checkpoint;
import dev.hexforge.forward.DecoderWeights;
import dev.hexforge.lora.LoraAdapter;
import dev.hexforge.lora.data.DatasetReader;
import dev.hexforge.lora.data.EncodedExample;
import dev.hexforge.lora.data.ExampleEncoder;
import dev.hexforge.testing.Fixtures;
import dev.hexforge.tokenizer.Tokenizer;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** The training forward's response loss on eval.json against the reference run's figures (results.json). */
class LossAgainstReferenceTest {
    static DecoderWeights weights;
    static List<TrainingExample> eval;

    @BeforeAll
    static void load() {
        try (Checkpoint ckpt = Checkpoint.open(Fixtures.qwen2Tiny()); Tokenizer tok = Tokenizer.load(Fixtures.qwen2Tiny())) {
            weights = DecoderWeights.load(ckpt);
            eval = new ExampleEncoder(tok, 256).encode(DatasetReader.read(Fixtures.root().resolve("lora-task/eval.json")))
                    .examples().stream().map(EncodedExample::example).toList();
        }
    }

    static double meanLoss(LoraTrainingModel<?> model) {
        double sum = 0;
        int n = 0;
        for (int i = 0; i < eval.size(); i += 16) {
            LoraTrainingModel.Loss l = model.loss(eval.subList(i, Math.min(eval.size(), i + 16)));
            sum += l.sum();
            n += l.tokens();
        }
        return sum / n;
    }

    @Test
    void baseModelLossMatchesTheReference() {
        double ref = Fixtures.json(Fixtures.root().resolve("lora-task/results.json")).path("base").path("eval_response_loss").asDouble();
        try (Kernels<float[]> k = Kernels.float32(1)) {
            LoraParams<float[]> p = LoraParams.from(k, weights.config(),
                    zeroAdapter());
            assertEquals(ref, meanLoss(new LoraTrainingModel<>(k, weights, p)), 1e-4);
        }
    }

    @Test
    void referenceAdapterLossMatchesTheReference() {
        double ref = Fixtures.json(Fixtures.root().resolve("lora-task/results.json")).path("merged").path("eval_response_loss").asDouble();
        try (Kernels<float[]> k = Kernels.float32(2)) {
            LoraAdapter adapter = LoraAdapter.read(Fixtures.root().resolve("lora-task/reference_adapter"), weights.config());
            assertEquals(ref, meanLoss(new LoraTrainingModel<>(k, weights, LoraParams.from(k, weights.config(), adapter))), 1e-4);
        }
    }

    static LoraAdapter zeroAdapter() {
        LoraAdapter ref = LoraAdapter.read(Fixtures.root().resolve("lora-task/reference_adapter"), weights.config());
        var zero = new java.util.LinkedHashMap<String, DecoderWeights.LowRankDelta>();
        ref.deltas().forEach((name, d) -> zero.put(name, new DecoderWeights.LowRankDelta(d.a(), new float[d.b().length], d.rank(), d.scale())));
        return new LoraAdapter(ref.config(), zero);
    }
}
