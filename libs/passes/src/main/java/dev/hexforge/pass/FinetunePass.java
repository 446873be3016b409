package dev.hexforge.pass;

import com.fasterxml.jackson.annotation.JsonInclude;
import dev.hexforge.checkpoint.Checkpoint;
import dev.hexforge.checkpoint.NonFinite;
import dev.hexforge.contracts.JobSpec;
import dev.hexforge.forward.DecoderWeights;
import dev.hexforge.io.Folders;
import dev.hexforge.memory.MemoryPlan;
import dev.hexforge.lora.data.DataReport;
import dev.hexforge.lora.data.DatasetReader;
import dev.hexforge.lora.data.EncodedExample;
import dev.hexforge.lora.data.ExampleEncoder;
import dev.hexforge.lora.train.LoraTrainer;
import dev.hexforge.lora.train.TrainingListener;
import dev.hexforge.lora.train.TrainingOptions;
import dev.hexforge.lora.train.TrainingReport;
import dev.hexforge.tokenizer.Tokenizer;

import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The finetune stage: a LoRA adapter (PEFT format) trained on a data file, evaluated on held-out data (a file, or a
 * split of the training data). Re-running into the same output folder continues from its newest checkpoint.
 */
public final class FinetunePass {
    public static final String KIND = "lora-adapter";

    /** @param evalData null holds out a split of {@code data} */
    /** The base model (and what to do with NaN or Inf weights in it), the training data and the eval data (or null). */
    public record Inputs(Path model, NonFinite nonFinite, Path data, Path evalData) {
    }

    /** The adapter folder (its checkpoints removed), the trainer's report and the summary a stage reports. */
    public record Result(Path adapter, TrainingReport training, DataReport data, int trainExamples, int evalExamples,
                         Summary report) {
    }

    /**
     * What the finetune stage reports; the dashboard draws {@code lossCurve} ([step, loss] per step) and
     * {@code epochs} (train and eval loss per epoch). A metric not measured (NaN) is left out rather than faked, as JSON
     * has no NaN.
     */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record Summary(int steps, int resumedFromStep, double seconds, double tokensPerSecond, long trainableParameters,
                          int examples, int truncated, int dropped, int evalExamples, List<double[]> lossCurve,
                          List<Map<String, Double>> epochs, Double trainLoss, Double evalLoss, Double exactMatch) {
    }

    private FinetunePass() {
    }

    /** A job spec's finetune settings; what the spec does not carry takes {@link TrainingOptions}' constants. */
    public static TrainingOptions options(JobSpec.Finetune f) {
        return new TrainingOptions(f.r(), f.alpha(), f.dropout(), f.targets(), false, f.batch(), f.accumulation(),
                f.learningRate(), f.epochs(), f.maxLength(), f.seed(), TrainingOptions.WARMUP_RATIO, TrainingOptions.SCHEDULE,
                TrainingOptions.WEIGHT_DECAY, TrainingOptions.MAX_GRAD_NORM, TrainingOptions.CHECKPOINT_EVERY,
                TrainingOptions.EVAL_SPLIT, TrainingOptions.EVAL_MAX_NEW_TOKENS, TrainingOptions.defaultThreads())
                .withChatFormat(f.chatFormat());
    }

    public static Result run(Inputs in, TrainingOptions o, Path out, TrainingListener listener) {
        try (Checkpoint ckpt = Checkpoint.open(in.model(), in.nonFinite()); Tokenizer tok = Tokenizer.load(in.model(), o.chatFormatOverride())) {
            if (o.maxLength() > ckpt.config().maxPositionEmbeddings()) {
                throw new IllegalArgumentException("finetune.maxLength: " + o.maxLength() + " is longer than the model's context ("
                        + ckpt.config().maxPositionEmbeddings() + " positions, max_position_embeddings)");
            }
            MemoryPlan.require(MemoryPlan.finetune(ckpt.config(), ckpt.mapsBf16(), o.batchSize(), o.maxLength()));
            DecoderWeights base = DecoderWeights.frozen(ckpt);
            ExampleEncoder enc = new ExampleEncoder(tok, o.maxLength());
            ExampleEncoder.Encoded all = enc.encode(DatasetReader.read(in.data()));
            List<EncodedExample> train = all.examples();
            List<EncodedExample> eval;
            if (in.evalData() != null) {
                eval = enc.encode(DatasetReader.read(in.evalData())).examples();
            } else {
                List<List<EncodedExample>> split = LoraTrainer.split(train, o.evalSplit(), o.seed());
                train = split.get(0);
                eval = split.get(1);
            }
            TrainingReport report = new LoraTrainer(base, tok, o, listener).train(train, all.report(), eval, out, ckpt.name());
            Folders.deleteTree(out.resolve("checkpoints"));
            return new Result(out, report, all.report(), train.size(), eval.size(), summary(report, all.report(), eval.size()));
        }
    }

    private static Summary summary(TrainingReport report, DataReport data, int evalExamples) {
        TrainingListener.EpochMetrics last = report.last();
        return new Summary(report.steps(), report.resumedFromStep(), report.seconds(), report.tokensPerSecond(),
                report.trainableParameters(), data.examples(), data.truncated(), data.dropped(), evalExamples,
                report.lossCurve().stream().filter(p -> Double.isFinite(p[1])).toList(),
                report.epochs().stream().map(m -> finite(Map.of("epoch", (double) m.epoch(), "trainLoss", m.trainLoss(),
                        "evalLoss", m.evalLoss()))).toList(),
                finiteOrNull(last.trainLoss()), finiteOrNull(last.evalLoss()), finiteOrNull(last.exactMatch()));
    }

    private static Double finiteOrNull(double v) {
        return Double.isFinite(v) ? v : null;
    }

    /** The finite values of {@code m}: JSON has no NaN, and a metric not measured is left out rather than faked. */
    public static Map<String, Double> finite(Map<String, Double> m) {
        Map<String, Double> out = new LinkedHashMap<>();
        m.forEach((k, v) -> {
            if (Double.isFinite(v)) {
                out.put(k, v);
            }
        });
        return out;
    }
}
