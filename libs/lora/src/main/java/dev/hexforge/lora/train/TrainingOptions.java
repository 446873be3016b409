package dev.hexforge.lora.train;

import dev.hexforge.lora.LoraConfig;
import dev.hexforge.tokenizer.ChatTemplate;

import java.util.List;

/**
 * Settings of a LoRA run. The ones a job spec carries (rank, alpha, dropout, targets, batch, accumulation, learning
 * rate, epochs, max length, seed) have their defaults in the job spec schema only; the others' defaults are the
 * constants here, used by the CLI and the fleet alike.
 *
 * @param warmupRatio     fraction of the optimizer steps spent warming the learning rate up linearly from 0
 * @param schedule        decay after warm-up: {@code cosine} or {@code linear}, both to 0
 * @param maxGradNorm     global gradient-norm clip; 0 disables
 * @param checkpointEvery optimizer steps between checkpoints (each epoch also ends with one); 0 = epochs only
 * @param evalSplit       fraction of the training data held out for evaluation when no eval file is given
 * @param evalMaxNewTokens greedy tokens generated per eval example for exact match
 * @param threads         worker threads for the kernels (results do not depend on it)
 * @param chatFormat      how examples are rendered: {@code auto} (the model's tokenizer files say), or a
 *                        {@link ChatTemplate.Format} by name ({@code chatml}, {@code llama3})
 */
public record TrainingOptions(int r, double alpha, double dropout, List<String> targets, boolean useRslora,
                              int batchSize, int accumulation, double learningRate, int epochs, int maxLength,
                              long seed, double warmupRatio, String schedule, double weightDecay, double maxGradNorm,
                              int checkpointEvery, double evalSplit, int evalMaxNewTokens, int threads,
                              String chatFormat) {
    /** {@link #chatFormat} that follows the model's tokenizer files. */
    public static final String AUTO_CHAT_FORMAT = "auto";

    /** The settings with the chat format the model's tokenizer files say. */
    public TrainingOptions(int r, double alpha, double dropout, List<String> targets, boolean useRslora,
                           int batchSize, int accumulation, double learningRate, int epochs, int maxLength,
                           long seed, double warmupRatio, String schedule, double weightDecay, double maxGradNorm,
                           int checkpointEvery, double evalSplit, int evalMaxNewTokens, int threads) {
        this(r, alpha, dropout, targets, useRslora, batchSize, accumulation, learningRate, epochs, maxLength, seed, warmupRatio,
                schedule, weightDecay, maxGradNorm, checkpointEvery, evalSplit, evalMaxNewTokens, threads, AUTO_CHAT_FORMAT);
    }

    public TrainingOptions {
        targets = List.copyOf(targets);
        require(batchSize >= 1, "batch size must be >= 1");
        require(accumulation >= 1, "gradient accumulation must be >= 1");
        require(learningRate > 0 && Double.isFinite(learningRate), "learning rate must be a positive number");
        require(epochs >= 1, "epochs must be >= 1");
        require(maxLength >= 2, "max length must be >= 2 tokens");
        require(dropout >= 0 && dropout < 1, "dropout must be in [0, 1)");
        require(warmupRatio >= 0 && warmupRatio < 1, "warm-up ratio must be in [0, 1)");
        require(schedule.equals("cosine") || schedule.equals("linear"), "schedule must be cosine or linear, got " + schedule);
        require(weightDecay >= 0, "weight decay must be >= 0");
        require(maxGradNorm >= 0, "max gradient norm must be >= 0 (0 disables clipping)");
        require(checkpointEvery >= 0, "checkpoint interval must be >= 0");
        require(evalSplit >= 0 && evalSplit < 1, "eval split must be in [0, 1)");
        require(evalMaxNewTokens >= 1, "eval max new tokens must be >= 1");
        require(threads >= 1, "threads must be >= 1");
        if (!AUTO_CHAT_FORMAT.equals(chatFormat)) {
            ChatTemplate.Format.parse(chatFormat == null ? "null" : chatFormat);
        }
    }

    /** The same settings with another chat format ({@code auto}, {@code chatml} or {@code llama3}). */
    public TrainingOptions withChatFormat(String format) {
        return new TrainingOptions(r, alpha, dropout, targets, useRslora, batchSize, accumulation, learningRate, epochs,
                maxLength, seed, warmupRatio, schedule, weightDecay, maxGradNorm, checkpointEvery, evalSplit, evalMaxNewTokens,
                threads, format);
    }

    /**
     * The same settings with the schedule and run settings a job spec does not carry (the CLI's flags): rsLoRA, the
     * warm-up share, the schedule, weight decay, gradient clipping, the checkpoint interval, the held-out share and the
     * threads.
     */
    public TrainingOptions withRun(boolean rslora, double warmup, String scheduleName, double decay, double clip, int checkpoints,
                                   double split, int workers) {
        return new TrainingOptions(r, alpha, dropout, targets, rslora, batchSize, accumulation, learningRate, epochs, maxLength, seed,
                warmup, scheduleName, decay, clip, checkpoints, split, evalMaxNewTokens, workers, chatFormat);
    }

    /** The chat format asked for, or null to take the model's. */
    public ChatTemplate.Format chatFormatOverride() {
        return AUTO_CHAT_FORMAT.equals(chatFormat) ? null : ChatTemplate.Format.parse(chatFormat);
    }

    private static void require(boolean ok, String message) {
        if (!ok) {
            throw new IllegalArgumentException(message);
        }
    }

    public static final double WARMUP_RATIO = 0.05;
    public static final String SCHEDULE = "cosine";
    public static final double WEIGHT_DECAY = 0;
    public static final double MAX_GRAD_NORM = 1.0;
    public static final int CHECKPOINT_EVERY = 50;
    public static final double EVAL_SPLIT = 0.05;
    public static final int EVAL_MAX_NEW_TOKENS = 16;

    /** Worker threads unless told otherwise: every core (results do not depend on it). */
    public static int defaultThreads() {
        return Runtime.getRuntime().availableProcessors();
    }

    public LoraConfig loraConfig(String baseModel) {
        return new LoraConfig(r, alpha, dropout, targets, useRslora, baseModel);
    }

    /** The settings that change the result (not threads or checkpoint spacing): a resumed run must match them. */
    public String fingerprint() {
        return "r=" + r + " alpha=" + alpha + " dropout=" + dropout + " targets=" + targets + " rslora=" + useRslora
                + " batch=" + batchSize + " accum=" + accumulation + " lr=" + learningRate + " epochs=" + epochs
                + " maxLen=" + maxLength + " seed=" + seed + " warmup=" + warmupRatio + " schedule=" + schedule
                + " wd=" + weightDecay + " clip=" + maxGradNorm + " evalSplit=" + evalSplit
                + (AUTO_CHAT_FORMAT.equals(chatFormat) ? "" : " chat=" + chatFormat);
    }
}
