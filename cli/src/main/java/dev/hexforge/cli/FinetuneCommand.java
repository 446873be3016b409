package dev.hexforge.cli;

import dev.hexforge.checkpoint.NonFinite;
import dev.hexforge.contracts.JobSpec;
import dev.hexforge.lora.train.TrainingListener;
import dev.hexforge.lora.train.TrainingOptions;
import dev.hexforge.lora.train.TrainingReport;
import dev.hexforge.pass.FinetunePass;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;

@Command(name = "finetune", mixinStandardHelpOptions = true,
        description = {"Train a LoRA adapter (PEFT format) on Alpaca JSON/JSONL, chat JSONL or plain text.",
                "Re-running with the same --out continues from its newest checkpoint."})
final class FinetuneCommand implements Callable<Integer> {
    @picocli.CommandLine.Spec
    picocli.CommandLine.Model.CommandSpec spec;

    @Option(names = "--model", required = true, description = "base Hugging Face folder")
    Path model;
    @Option(names = "--data", required = true, description = "training data (.json, .jsonl or .txt)")
    Path data;
    @Option(names = "--eval", description = "eval data; without it --eval-split of the training data is held out")
    Path eval;
    @Option(names = "--out", required = true, description = "adapter folder (checkpoints go to OUT/checkpoints)")
    Path out;
    @Option(names = "--r", descriptionKey = "finetune.r")
    int r;
    @Option(names = "--alpha", descriptionKey = "finetune.alpha")
    double alpha;
    @Option(names = "--dropout", descriptionKey = "finetune.dropout")
    double dropout;
    @Option(names = "--targets", split = ",", descriptionKey = "finetune.targets")
    List<String> targets;
    @Option(names = "--rslora", description = "scale by alpha/sqrt(r) (rsLoRA)")
    boolean rslora;
    @Option(names = "--batch", descriptionKey = "finetune.batch")
    int batch;
    @Option(names = "--accum", descriptionKey = "finetune.accumulation")
    int accum;
    @Option(names = "--lr", descriptionKey = "finetune.learningRate")
    double lr;
    @Option(names = "--epochs", descriptionKey = "finetune.epochs")
    int epochs;
    @Option(names = "--max-len", descriptionKey = "finetune.maxLength")
    int maxLen;
    @Option(names = "--seed", descriptionKey = "finetune.seed")
    long seed;
    @Option(names = "--chat-format", descriptionKey = "finetune.chatFormat")
    String chatFormat;
    @Option(names = "--warmup-ratio", description = "share of steps warming up (default ${DEFAULT-VALUE})")
    double warmup = TrainingOptions.WARMUP_RATIO;
    @Option(names = "--schedule", description = "cosine or linear (default ${DEFAULT-VALUE})")
    String schedule = TrainingOptions.SCHEDULE;
    @Option(names = "--weight-decay", description = "AdamW weight decay (default ${DEFAULT-VALUE})")
    double weightDecay = TrainingOptions.WEIGHT_DECAY;
    @Option(names = "--max-grad-norm", description = "gradient clipping, 0 = off (default ${DEFAULT-VALUE})")
    double maxGradNorm = TrainingOptions.MAX_GRAD_NORM;
    @Option(names = "--checkpoint-every", description = "steps between checkpoints, 0 = epochs only (default ${DEFAULT-VALUE})")
    int checkpointEvery = TrainingOptions.CHECKPOINT_EVERY;
    @Option(names = "--eval-split", description = "share held out when there is no --eval (default ${DEFAULT-VALUE})")
    double evalSplit = TrainingOptions.EVAL_SPLIT;
    @Option(names = "--threads", description = "worker threads (default: all cores)")
    int threads = TrainingOptions.defaultThreads();
    @Option(names = "--json", description = "print one JSON object (the report summary) instead of text")
    boolean json;

    @Option(names = "--allow-non-finite", descriptionKey = "allowNonFinite")
    boolean allowNonFinite;

    @Override
    public Integer call() {
        // the flags as a job spec's finetune settings, mapped by the pass as a fleet job's are, then what only the CLI sets
        JobSpec job = SpecOptions.spec(spec, List.of(), Map.of());
        TrainingOptions o = FinetunePass.options(job.finetune())
                .withRun(rslora, warmup, schedule, weightDecay, maxGradNorm, checkpointEvery, evalSplit, threads);
        List<String> epochLines = new ArrayList<>();
        FinetunePass.Result result;
        try (ProgressBar bar = new ProgressBar("finetune")) {
            result = FinetunePass.run(new FinetunePass.Inputs(model, NonFinite.allowedIf(job.allowNonFinite()), data, eval), o, out, new TrainingListener() {
                @Override
                public void onStep(StepMetrics m) {
                    bar.update(String.format("step %d/%d loss %.4f lr %.2e %.0f tok/s ETA %.0fs", m.step(), m.totalSteps(),
                            m.loss(), m.learningRate(), m.tokensPerSecond(), m.etaSeconds()), m.step(), m.totalSteps());
                }

                @Override
                public void onEpoch(EpochMetrics m) {
                    epochLines.add(String.format("epoch %d: train loss %.4f, eval loss %.4f, exact match %.1f%%", m.epoch(),
                            m.trainLoss(), m.evalLoss(), m.exactMatch() * 100));
                }
            });
            bar.finish();
        }
        TrainingReport report = result.training();
        TrainingListener.EpochMetrics last = report.last();
        if (json) {
            new Json().put("out", out.toAbsolutePath().toString()).put("steps", report.steps())
                    .put("resumed_from_step", report.resumedFromStep()).put("train_loss", last.trainLoss())
                    .put("eval_loss", last.evalLoss()).put("exact_match", last.exactMatch())
                    .put("seconds", report.seconds()).put("tokens_per_second", report.tokensPerSecond()).print();
        } else {
            var d = result.data();
            System.out.printf("data: %d examples (%d cut to %d tokens, %d dropped), %d train / %d eval%n",
                    d.examples(), d.truncated(), maxLen, d.dropped(), result.trainExamples(), result.evalExamples());
            epochLines.forEach(System.out::println);
            System.out.printf("adapter written to %s (%d steps, %.1f s, %.0f tokens/s)%n", out, report.steps(),
                    report.seconds(), report.tokensPerSecond());
        }
        return 0;
    }
}
