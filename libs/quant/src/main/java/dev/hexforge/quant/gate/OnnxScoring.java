package dev.hexforge.quant.gate;

import dev.hexforge.checkpoint.Checkpoint;
import dev.hexforge.eval.Perplexity;
import dev.hexforge.generate.CausalLm;
import dev.hexforge.io.Folders;
import dev.hexforge.onnx.export.DecoderExporter;
import dev.hexforge.onnx.export.ExportOptions;
import dev.hexforge.onnx.export.LinearFormat;
import dev.hexforge.onnx.runtime.LargeStack;
import dev.hexforge.onnx.runtime.OnnxLm;
import dev.hexforge.progress.Progress;

import java.nio.file.Path;

/** Scores a model as ONNX Runtime runs it on this CPU: a dynamic export into a scratch folder, deleted afterwards. */
public final class OnnxScoring {
    private OnnxScoring() {
    }

    public static Perplexity.Scored score(Checkpoint ckpt, LinearFormat format, GateText text, Path scratch) {
        try {
            DecoderExporter.export(ckpt, scratch, ExportOptions.dynamic(), format, Progress.NONE);
            return LargeStack.call("hexforge-gate", () -> {
                try (CausalLm lm = OnnxLm.open(scratch, Runtime.getRuntime().availableProcessors())) {
                    return Perplexity.score(lm, text.ids(), text.window(), null);
                }
            });
        } finally {
            Folders.deleteQuietly(scratch);
        }
    }
}
