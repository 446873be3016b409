package dev.hexforge.pass;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.hexforge.compile.CompileException;
import dev.hexforge.compile.CompileOptions;
import dev.hexforge.compile.OrtQnnBundler;
import dev.hexforge.compile.QnnSdk;
import dev.hexforge.compile.Soc;
import dev.hexforge.compile.genie.GenieConfig;
import dev.hexforge.contracts.JobSpec;
import dev.hexforge.contracts.TargetSettings;

import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The compile stage: a static export as a bundle for the NPU. {@code ort-qnn} (ONNX Runtime's QNN execution
 * provider reads the QDQ graphs) needs nothing beyond Hexforge; {@code qnn-context-binary}, {@code qnn-model-lib} and
 * {@code genie} (a Genie bundle from a Genie export) run the QNN SDK's tools, so they need its root.
 *
 * @see OrtQnnBundler
 * @see QnnSdk
 */
public final class CompilePass {
    public static final List<String> TARGETS = List.of(OrtQnnBundler.TARGET, QnnSdk.CONTEXT_BINARY, QnnSdk.MODEL_LIB, QnnSdk.GENIE);

    /** @param qnnSdkRoot the QNN SDK, or null where there is none */
    public record Options(String target, CompileOptions compile, Path qnnSdkRoot) {
        public Options {
            if (TargetSettings.ORT_CPU.equals(target)) {
                throw new CompileException("target ort-cpu has nothing to compile: ONNX Runtime runs the export on the CPU as it is",
                        "ship the export (quantize.format: matmulnbits), or compile for an NPU target");
            }
            if (!TARGETS.contains(target)) {
                throw new IllegalArgumentException("target must be one of " + TARGETS + ", got '" + target + "'");
            }
        }
    }

    /**
     * @param report the bundle's {@code manifest.json} with the compile's time: a document whose fields are the target's
     *               (graphs and their IO, tool versions, a Genie bundle's parts and device memory), so it stays JSON
     */
    public record Result(Path bundle, String kind, Map<String, Object> report) {
    }

    private CompilePass() {
    }

    public static Options options(JobSpec.Compile c, Path qnnSdkRoot) {
        JobSpec.Sampler s = c.sampler();
        GenieConfig.Sampler sampler = s == null ? GenieConfig.Sampler.DEFAULT
                : new GenieConfig.Sampler(s.seed(), s.temperature(), s.topK(), s.topP());
        return new Options(c.target(), CompileOptions.of(c.soc(), c.htpArch(), sampler), qnnSdkRoot);
    }

    /**
     * What refuses a compile before any export is made for it: a target that needs the QNN SDK where none is
     * configured, a SoC that is not known without its HTP architecture.
     */
    public static void check(Options o) {
        Soc.resolve(o.compile().soc(), o.compile().htpArch());
        if (!o.target().equals(OrtQnnBundler.TARGET) && o.qnnSdkRoot() == null) {
            throw new CompileException("target " + o.target() + " needs the QNN SDK and none is configured",
                    "set QNN_SDK_ROOT (the compile service's hexforge.qnn-sdk-root, or --qnn-sdk), or use target ort-qnn");
        }
    }

    @SuppressWarnings("unchecked")
    public static Result run(Path export, Options o, Path out) {
        long t0 = System.nanoTime();
        check(o);
        // the SDK's tools run in folders of their own: every path they are given is absolute
        export = export.toAbsolutePath();
        out = out.toAbsolutePath();
        ObjectNode manifest;
        if (o.target().equals(OrtQnnBundler.TARGET)) {
            manifest = OrtQnnBundler.build(export, out, o.compile());
        } else {
            manifest = new QnnSdk(o.qnnSdkRoot()).build(o.target(), export, out, o.compile());
        }
        Map<String, Object> report = new LinkedHashMap<>(new ObjectMapper().convertValue(manifest, Map.class));
        report.put("seconds", (System.nanoTime() - t0) / 1e9);
        return new Result(out, o.target() + "-bundle", report);
    }
}
