package dev.hexforge.lora.train;

import java.nio.file.Path;

/** Live metrics of a run. Called on the training thread; keep it quick. */
public interface TrainingListener {

    /** After every optimizer step. */
    record StepMetrics(int step, int totalSteps, int epoch, double loss, double learningRate, double gradNorm,
                       double tokensPerSecond, double etaSeconds) {
    }

    /** After every epoch; eval figures are NaN without an eval set. */
    record EpochMetrics(int epoch, double trainLoss, double evalLoss, double exactMatch) {
    }

    default void onStep(StepMetrics m) {
    }

    default void onEpoch(EpochMetrics m) {
    }

    default void onCheckpoint(int step, Path dir) {
    }

    TrainingListener NONE = new TrainingListener() {
    };
}
