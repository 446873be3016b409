package dev.hexforge.quant.gate;

import dev.hexforge.checkpoint.Checkpoint;
import dev.hexforge.eval.Perplexity;
import dev.hexforge.generate.CausalLm;
import dev.hexforge.io.Folders;
import dev.hexforge.onnx.export.DecoderExporter;
import dev.hexforge.onnx.export.ExportOptions;
import dev.hexforge.onnx.export.LinearFormat;
import dev.hexforge.onnx.qdq.ActivationEncodings;
import dev.hexforge.onnx.runtime.LargeStack;
import dev.hexforge.onnx.runtime.OnnxLm;
import dev.hexforge.onnx.runtime.PartwisePrompt;
import dev.hexforge.progress.Progress;

import java.nio.file.Path;

/** Scores a model as ONNX Runtime runs it on this CPU: an export into a scratch folder, deleted afterwards. */
public final class OnnxScoring {
    private OnnxScoring() {
    }

    /**
     * Scores the fully quantized static graphs (weights as {@code format} stores them, every activation at its
     * {@code activations} encoding): one prompt-graph run per window, as a phone runs a prompt; a part of the graphs
     * at a time (the NPU's per-graph limit cuts a large model into parts), so the gate needs the memory of one part.
     */
    public static Perplexity.Scored scoreStatic(Checkpoint ckpt, LinearFormat format, ActivationEncodings activations,
                                                GateText text, Path scratch) {
        try {
            DecoderExporter.export(ckpt, scratch, ExportOptions.staticShapes(text.window(), text.window() + 1), format,
                    activations, Progress.NONE);
            return LargeStack.call("hexforge-gate", () -> PartwisePrompt.score(scratch, text.ids(),
                    Runtime.getRuntime().availableProcessors()));
        } finally {
            Folders.deleteQuietly(scratch);
        }
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
