package dev.hexforge.contracts;

import java.util.List;

/** A validated job spec (version 1) with every default filled in; see {@link JobSpecSchema} for each field. */
public record JobSpec(int schemaVersion, String name, Model model, List<String> stages, Finetune finetune,
                      Quantize quantize, Export export, Compile compile, Sign sign, Benchmark benchmark) {

    public record Model(String upload, String path) {
    }

    public record Finetune(String data, String evalData, int r, double alpha, double dropout, List<String> targets,
                           int batch, int accumulation, double learningRate, int epochs, int maxLength, long seed) {
    }

    public record Quantize(String method, int bits, int group, boolean symmetric, String calibration,
                           int calibrationSamples, int calibrationLength, List<String> keep, Auto auto, String format,
                           int accuracyLevel, double maxDeltaPpl) {
    }

    public record Auto(double maxExtraBytesPercent) {
    }

    public record Export(String variant, int opset, int seq, int ctx) {
    }

    public record Compile(String target, String soc, int htpArch) {
    }

    public record Sign(boolean provenance) {
    }

    public record Benchmark(String device, List<String> backends, int promptLength, int newTokens) {
    }

    public List<Stage> stageList() {
        return stages.stream().map(Stage::parse).toList();
    }
}
