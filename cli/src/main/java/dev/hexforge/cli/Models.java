package dev.hexforge.cli;

import dev.hexforge.checkpoint.Checkpoint;
import dev.hexforge.forward.DecoderForward;
import dev.hexforge.forward.DecoderWeights;
import dev.hexforge.generate.CausalLm;
import dev.hexforge.onnx.export.ExportInfo;
import dev.hexforge.onnx.runtime.OnnxLm;

import java.nio.file.Files;
import java.nio.file.Path;

/** Opens a model folder for inference: an ONNX export on ONNX Runtime, or a Hugging Face folder on the Java forward. */
final class Models {
    private Models() {
    }

    static CausalLm open(Path dir, int threads) {
        if (!Files.isDirectory(dir)) {
            throw new IllegalArgumentException(dir + " is not a folder");
        }
        if (ExportInfo.isExport(dir)) {
            return OnnxLm.open(dir, threads);
        }
        try (Checkpoint ckpt = Checkpoint.open(dir)) {
            return new DecoderForward(DecoderWeights.load(ckpt));
        }
    }

    static String kind(Path dir) {
        return ExportInfo.isExport(dir) ? "onnx-" + ExportInfo.read(dir).variant().name().toLowerCase() : "java-reference";
    }
}
