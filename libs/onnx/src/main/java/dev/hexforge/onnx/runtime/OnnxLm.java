package dev.hexforge.onnx.runtime;

import dev.hexforge.generate.CausalLm;
import dev.hexforge.onnx.export.ExportInfo;

import java.nio.file.Path;

/** Opens an export folder with the runner that matches its variant. */
public final class OnnxLm {
    private OnnxLm() {
    }

    public static CausalLm open(Path dir, int threads) {
        ExportInfo info = ExportInfo.read(dir);
        return switch (info.variant()) {
            case DYNAMIC -> new DynamicOnnxLm(dir, info, threads);
            case STATIC -> new StaticOnnxLm(dir, info, threads);
        };
    }
}
