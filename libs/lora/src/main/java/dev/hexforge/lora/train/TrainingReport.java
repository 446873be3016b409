package dev.hexforge.lora.train;

import dev.hexforge.lora.data.DataReport;

import java.util.List;

/**
 * The record of a finished run, written as {@code training_report.json} beside the adapter. {@code seconds} is
 * the wall time of this invocation; {@code tokensPerSecond} counts input tokens over training time only (evaluation
 * and checkpoint writing excluded).
 */
public record TrainingReport(String options, DataReport train, int evalExamples, long trainableParameters, int steps,
                             int resumedFromStep, List<double[]> lossCurve, List<TrainingListener.EpochMetrics> epochs,
                             double seconds, double tokensPerSecond, String kernels, int threads) {

    public TrainingListener.EpochMetrics last() {
        return epochs.isEmpty() ? null : epochs.get(epochs.size() - 1);
    }
}
