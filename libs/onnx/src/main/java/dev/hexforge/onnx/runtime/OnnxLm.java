package dev.hexforge.onnx.runtime;

import dev.hexforge.generate.CausalLm;
import dev.hexforge.generate.LogitRows;
import dev.hexforge.onnx.export.ExportInfo;

import java.nio.file.Path;
import java.util.Map;

/** Opens an export folder with the runner that matches its variant. */
public final class OnnxLm {
    private OnnxLm() {
    }

    public static OnnxCausalLm open(Path dir, int threads) {
        return open(dir, threads, null);
    }

    /** @param qnn QNN execution provider options, or null for the CPU (see {@link OrtSessions#open(Path, int, Map)}) */
    public static OnnxCausalLm open(Path dir, int threads, Map<String, String> qnn) {
        return open(dir, threads, qnn, null);
    }

    /**
     * @param profileDir where each graph's session writes its ONNX Runtime profile ({@code <role>_<time>.json}) when
     *                   the model is closed, or null for no profiling (see {@link OpProfile})
     */
    public static OnnxCausalLm open(Path dir, int threads, Map<String, String> qnn, Path profileDir) {
        return open(dir, threads, qnn, profileDir, LogitRows.ALL);
    }

    /**
     * @param rows {@link LogitRows#LAST} for a model that only generates: a dynamic export made with the
     *             {@code logits_from} initializer then runs its LM head for the last appended position only; static
     *             graphs (fixed output shapes for the NPU) and older exports still compute every row and return them
     */
    public static OnnxCausalLm open(Path dir, int threads, Map<String, String> qnn, Path profileDir, LogitRows rows) {
        return open(dir, threads, qnn, profileDir, rows, null);
    }

    /**
     * @param adapter the LoRA adapter the runs feed ({@link LoraFeed#open}): one of the export's by name, an adapter
     *                file, or null for the base model
     */
    public static OnnxCausalLm open(Path dir, int threads, Map<String, String> qnn, Path profileDir, LogitRows rows, String adapter) {
        ExportInfo info = ExportInfo.read(dir);
        LoraFeed lora = LoraFeed.open(dir, info, adapter);
        try {
            return switch (info.variant()) {
                case DYNAMIC -> new DynamicOnnxLm(dir, info, threads, qnn, profileDir, rows, lora);
                case STATIC, GENIE -> new StaticOnnxLm(dir, info, threads, qnn, profileDir, lora);
            };
        } catch (RuntimeException e) {
            lora.close();
            throw e;
        }
    }
}
