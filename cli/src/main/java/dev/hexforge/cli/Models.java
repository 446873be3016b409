package dev.hexforge.cli;

import dev.hexforge.checkpoint.Checkpoint;
import dev.hexforge.forward.DecoderForward;
import dev.hexforge.forward.DecoderWeights;
import dev.hexforge.generate.CausalLm;
import dev.hexforge.generate.LogitRows;
import dev.hexforge.memory.MemoryPlan;
import dev.hexforge.onnx.export.ExportInfo;
import dev.hexforge.onnx.runtime.OnnxLm;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/** Opens a model folder for inference: an ONNX export on ONNX Runtime, or a Hugging Face folder on the Java forward. */
final class Models {
    private Models() {
    }

    /** Where the commands that write several folders put their models, in the order a CPU runs them best. */
    private static final List<String> INSIDE = List.of("onnx-model", "matmulnbits", "qdq", "checkpoint");

    /**
     * The model a folder names: the folder itself when it is an export or a Hugging Face folder, else the model
     * inside an output of {@code quantize} (its export, or the quantized checkpoint), said on stderr.
     */
    static Path find(Path dir) {
        if (isModel(dir)) {
            return dir;
        }
        for (String name : INSIDE) {
            Path inside = dir.resolve(name);
            if (isModel(inside)) {
                System.err.println("hexforge: using the model in " + inside);
                return inside;
            }
        }
        throw new IllegalArgumentException(dir + " holds no model: no export.json or config.json, and no " + String.join("/, ", INSIDE)
                + "/ folder with one");
    }

    private static boolean isModel(Path dir) {
        return ExportInfo.isExport(dir) || Files.isRegularFile(dir.resolve("config.json"));
    }

    /** @param rows {@link LogitRows#LAST} where the model only generates (an export then skips the head for earlier positions) */
    static CausalLm open(Path dir, int threads, LogitRows rows) {
        return open(dir, threads, rows, null);
    }

    /**
     * @param adapter a LoRA adapter for an export whose graphs take one: its name in the export, or an adapter file;
     *                null for the base model
     */
    static CausalLm open(Path dir, int threads, LogitRows rows, String adapter) {
        if (!Files.isDirectory(dir)) {
            throw new IllegalArgumentException(dir + " is not a folder");
        }
        if (ExportInfo.isExport(dir)) {
            return OnnxLm.open(dir, threads, null, null, rows, adapter);
        }
        refuseAdapter(dir, adapter);
        try (Checkpoint ckpt = Checkpoint.open(dir)) {
            MemoryPlan.require(MemoryPlan.referenceForward(ckpt.config(), ckpt.mapsBf16()));
            return new DecoderForward(DecoderWeights.load(ckpt));
        }
    }

    /** An adapter runs on an export made with it, never on a Hugging Face folder: refused when one is given for {@code dir}. */
    static void refuseAdapter(Path dir, String adapter) {
        if (adapter != null) {
            throw new IllegalArgumentException("--adapter runs on an ONNX export made with --adapter; " + dir
                    + " is a Hugging Face folder (merge the adapter into it with hexforge merge instead)");
        }
    }

    static String kind(Path dir) {
        return ExportInfo.isExport(dir) ? "onnx-" + ExportInfo.read(dir).variant().name().toLowerCase() : "java-reference";
    }
}
