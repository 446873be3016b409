package dev.hexforge.lora.train;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import dev.hexforge.forward.DecoderWeights;
import dev.hexforge.kernels.Kernels;
import dev.hexforge.lora.LoraAdapter;
import dev.hexforge.lora.LoraConfig;
import dev.hexforge.lora.data.DataReport;
import dev.hexforge.lora.data.EncodedExample;
import dev.hexforge.tokenizer.Tokenizer;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import java.util.SplittableRandom;

/**
 * Trains a LoRA adapter: epochs of shuffled mini-batches (optionally accumulated), AdamW with warm-up and decay,
 * global-norm clipping, dropout on the adapter inputs; eval loss and exact match after every epoch; checkpoints
 * every N steps and at every epoch end. Each optimizer step's loss is the mean over all target tokens of all its
 * micro-batches, so accumulation k × batch b equals batch k·b. Writes the PEFT adapter and
 * {@code training_report.json} into the output folder.
 */
public final class LoraTrainer {
    public static final String REPORT = "training_report.json";

    private final DecoderWeights base;
    private final Tokenizer tokenizer;
    private final TrainingOptions options;
    private final TrainingListener listener;

    public LoraTrainer(DecoderWeights base, Tokenizer tokenizer, TrainingOptions options, TrainingListener listener) {
        this.base = base;
        this.tokenizer = tokenizer;
        this.options = options;
        this.listener = listener;
    }

    /** Holds out {@code evalSplit} of the examples (seeded) when no separate eval set was given. */
    public static List<List<EncodedExample>> split(List<EncodedExample> all, double evalSplit, long seed) {
        int held = evalSplit <= 0 || all.size() < 2 ? 0 : Math.max(1, (int) Math.round(all.size() * evalSplit));
        int[] order = permutation(all.size(), new SplittableRandom(seed ^ 0x5EEDL));
        List<EncodedExample> train = new ArrayList<>();
        List<EncodedExample> eval = new ArrayList<>();
        for (int i = 0; i < order.length; i++) {
            (i < held ? eval : train).add(all.get(order[i]));
        }
        return List.of(train, eval);
    }

    /**
     * Runs to the end, continuing from the newest checkpoint in {@code out} when there is one (its settings and data
     * must be the same), and returns the report.
     */
    public TrainingReport train(List<EncodedExample> train, DataReport dataReport, List<EncodedExample> eval, Path out,
                                String baseModelName) {
        if (train.isEmpty()) {
            throw new TrainingException("the training set is empty");
        }
        if (Files.isRegularFile(out.resolve(LoraAdapter.WEIGHTS)) && Files.isRegularFile(out.resolve(REPORT))) {
            throw new TrainingException(out + " already holds a finished adapter; choose another output folder");
        }
        LoraConfig loraConfig = options.loraConfig(baseModelName);
        int perStep = options.batchSize() * options.accumulation();
        int stepsPerEpoch = (train.size() + perStep - 1) / perStep;
        int totalSteps = stepsPerEpoch * options.epochs();
        LearningRateSchedule schedule = LearningRateSchedule.of(options, totalSteps);
        String dataFingerprint = fingerprint(train, eval);
        try (Kernels<float[]> k = Kernels.float32(options.threads())) {
            LoraParams<float[]> params = LoraParams.init(k, base.config(), loraConfig, options.seed());
            LoraTrainingModel<float[]> model = new LoraTrainingModel<>(k, base, params);
            AdamW<float[]> adam = new AdamW<>(k, params, options.weightDecay());
            List<double[]> curve = new ArrayList<>();
            List<TrainingListener.EpochMetrics> epochs = new ArrayList<>();
            int startStep = 0;
            Optional<TrainingCheckpoint.Loaded> resume = TrainingCheckpoint.latest(out, base.config());
            if (resume.isPresent()) {
                TrainingCheckpoint.Loaded c = resume.get();
                if (!c.state().options().equals(options.fingerprint())) {
                    throw new TrainingException("checkpoint " + c.dir() + " was made with other settings ("
                            + c.state().options() + "); resume with those or choose another output folder");
                }
                if (!c.state().data().equals(dataFingerprint)) {
                    throw new TrainingException("checkpoint " + c.dir() + " was made with other data; resume with the "
                            + "same data files or choose another output folder");
                }
                params.load(c.adapter());
                adam.restore(c.state().step(), c.firstMoments(), c.secondMoments());
                curve.addAll(c.state().lossCurve());
                epochs.addAll(c.state().epochs());
                startStep = c.state().step();
            }
            long started = System.nanoTime();
            long tokens = 0;
            long pausedNanos = 0;
            int lastGood = startStep;
            int[] order = null;
            for (int step = startStep; step < totalSteps; step++) {
                if (Thread.currentThread().isInterrupted()) {
                    throw new TrainingException("training was cancelled at step " + step);
                }
                int epoch = step / stepsPerEpoch;
                if (order == null || step % stepsPerEpoch == 0) {
                    order = permutation(train.size(), new SplittableRandom(options.seed() + 1_000_003L * (epoch + 1)));
                }
                int from = (step % stepsPerEpoch) * perStep;
                int to = Math.min(train.size(), from + perStep);
                int targets = 0;
                for (int i = from; i < to; i++) {
                    targets += train.get(order[i]).example().targetCount();
                }
                params.zeroGradients();
                double lossSum = 0;
                int micro = 0;
                for (int m = from; m < to; m += options.batchSize()) {
                    List<TrainingExample> batch = new ArrayList<>();
                    for (int i = m; i < Math.min(to, m + options.batchSize()); i++) {
                        TrainingExample e = train.get(order[i]).example();
                        batch.add(e);
                        tokens += e.inputLength();
                    }
                    lossSum += model.forwardBackward(batch, 1.0 / targets, dropoutSeed(step, micro++)).sum();
                }
                double loss = lossSum / targets;
                double norm = adam.gradientNorm();
                if (!Double.isFinite(loss) || !Double.isFinite(norm)) {
                    throw new TrainingException("training diverged at step " + (step + 1) + ": the loss is " + loss
                            + (lastGood > 0 ? "; the last good checkpoint (step " + lastGood + ") is kept in "
                            + out.resolve(TrainingCheckpoint.DIR) + ": lower the learning rate and start again in "
                            + "a new folder" : "; lower the learning rate"));
                }
                double clip = options.maxGradNorm() > 0 && norm > options.maxGradNorm() ? options.maxGradNorm() / norm : 1;
                double lr = schedule.at(step);
                adam.step(lr, clip);
                curve.add(new double[]{step, loss});
                double elapsed = (System.nanoTime() - started - pausedNanos) / 1e9;
                int done = step + 1;
                listener.onStep(new TrainingListener.StepMetrics(done, totalSteps, epoch + 1, loss, lr, norm,
                        tokens / Math.max(elapsed, 1e-9), elapsed / (done - startStep) * (totalSteps - done)));
                boolean epochEnd = done % stepsPerEpoch == 0;
                long pauseStart = System.nanoTime();
                if (epochEnd) {
                    double trainLoss = 0;
                    int n = 0;
                    for (double[] p : curve) {
                        if ((int) p[0] / stepsPerEpoch == epoch) {
                            trainLoss += p[1];
                            n++;
                        }
                    }
                    TrainingListener.EpochMetrics em = evaluate(model, params, eval, epoch + 1, trainLoss / n);
                    epochs.add(em);
                    listener.onEpoch(em);
                }
                if (epochEnd || (options.checkpointEvery() > 0 && done % options.checkpointEvery() == 0)) {
                    Path dir = TrainingCheckpoint.save(out, new TrainingCheckpoint.State(done, options.fingerprint(),
                            dataFingerprint, curve, epochs), params.toAdapter(), adam);
                    lastGood = done;
                    listener.onCheckpoint(done, dir);
                }
                pausedNanos += System.nanoTime() - pauseStart;
            }
            double seconds = (System.nanoTime() - started) / 1e9;
            double trainSeconds = (System.nanoTime() - started - pausedNanos) / 1e9;
            params.toAdapter().write(out);
            TrainingReport report = new TrainingReport(options.fingerprint(), dataReport, eval.size(),
                    params.parameterCount(), totalSteps, startStep, curve, epochs, seconds,
                    tokens / Math.max(trainSeconds, 1e-9), k.name(), k.threads());
            writeReport(out, report);
            return report;
        }
    }

    private TrainingListener.EpochMetrics evaluate(LoraTrainingModel<float[]> model, LoraParams<float[]> params,
                                                   List<EncodedExample> eval, int epoch, double trainLoss) {
        if (eval.isEmpty()) {
            return new TrainingListener.EpochMetrics(epoch, trainLoss, Double.NaN, Double.NaN);
        }
        double loss = Evaluation.loss(model, eval);
        double em = Evaluation.exactMatch(base, params.toAdapter(), tokenizer, eval, options.evalMaxNewTokens());
        return new TrainingListener.EpochMetrics(epoch, trainLoss, loss, em);
    }

    private long dropoutSeed(int step, int micro) {
        return new SplittableRandom(options.seed() * 0x9E3779B97F4A7C15L + step * 1_000_033L + micro).nextLong();
    }

    static int[] permutation(int n, SplittableRandom rng) {
        int[] p = new int[n];
        for (int i = 0; i < n; i++) {
            p[i] = i;
        }
        for (int i = n - 1; i > 0; i--) {
            int j = rng.nextInt(i + 1);
            int t = p[i];
            p[i] = p[j];
            p[j] = t;
        }
        return p;
    }

    private static String fingerprint(List<EncodedExample> train, List<EncodedExample> eval) {
        try {
            MessageDigest md = MessageDigest.getInstance("SHA-256");
            for (List<EncodedExample> set : List.of(train, eval)) {
                for (EncodedExample e : set) {
                    for (int id : e.example().tokens()) {
                        md.update((byte) (id >>> 24));
                        md.update((byte) (id >>> 16));
                        md.update((byte) (id >>> 8));
                        md.update((byte) id);
                    }
                    for (boolean b : e.example().target()) {
                        md.update((byte) (b ? 1 : 0));
                    }
                    md.update((byte) 0xFF);
                }
                md.update((byte) 0xFE);
            }
            return HexFormat.of().formatHex(md.digest());
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    private static void writeReport(Path out, TrainingReport report) {
        try {
            Path tmp = out.resolve(REPORT + ".partial");
            new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT).writeValue(tmp.toFile(), report);
            Files.move(tmp, out.resolve(REPORT), StandardCopyOption.ATOMIC_MOVE,
                    StandardCopyOption.REPLACE_EXISTING);
        } catch (IOException e) {
            throw new UncheckedIOException("writing " + REPORT + ": " + e.getMessage(), e);
        }
    }
}
