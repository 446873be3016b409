package dev.hexforge.compile;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.hexforge.onnx.export.ExportInfo;
import dev.hexforge.onnx.export.Variant;
import dev.hexforge.onnx.qnn.Precision;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The QNN SDK (QAIRT) targets, run through the SDK's own tools under {@code root} (QNN_SDK_ROOT):
 * <ul>
 *   <li>{@code qnn-model-lib}: {@code qnn-onnx-converter} (every input's shape with {@code --input_dim}, every output with
 *       {@code --out_node}, the quantize stage's AIMET encodings of every weight and activation as
 *       {@code --quantization_overrides}, the activation bit width of the export's precision) then
 *       {@code qnn-model-lib-generator} for {@code aarch64-android}: one {@code lib<graph>.so} per graph;</li>
 *   <li>{@code qnn-context-binary}: the same libraries built for the host, then {@code qnn-context-binary-generator} with
 *       an HTP configuration for the SoC: one {@code <graph>.bin} context per graph.</li>
 * </ul>
 * An export whose activations are float, or without encodings, is refused before any tool runs: the converter has no
 * input list to calibrate from, so it would leave them float, which the HTP does not run. A failing tool's output goes
 * through {@link QnnTriage}, so the error names the cause (a node, an input) and the fix.
 */
public final class QnnSdk {
    public static final String MODEL_LIB = "qnn-model-lib";
    public static final String CONTEXT_BINARY = "qnn-context-binary";
    public static final String HOST = "x86_64-linux-clang";
    public static final String DEVICE = "aarch64-android";
    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
    private final Path root;

    public QnnSdk(Path root) {
        if (!Files.isRegularFile(tool(root, "qnn-onnx-converter"))) {
            throw new CompileException("no QNN SDK at " + root + " (missing bin/" + HOST + "/qnn-onnx-converter)",
                    "point QNN_SDK_ROOT (or hexforge.qnn-sdk-root) at an unpacked QAIRT SDK");
        }
        this.root = root;
    }

    private static Path tool(Path root, String name) {
        return root.resolve("bin").resolve(HOST).resolve(name);
    }

    /** The SDK's version, from its sdk.yaml ({@code version: ...}), else its folder name. */
    public String version() {
        Path yaml = root.resolve("sdk.yaml");
        try {
            if (Files.isRegularFile(yaml)) {
                for (String line : Files.readAllLines(yaml)) {
                    if (line.startsWith("version:")) {
                        return line.substring(8).strip();
                    }
                }
            }
        } catch (IOException ignored) {
            // fall back to the folder name
        }
        return root.toAbsolutePath().normalize().getFileName().toString();
    }

    public ObjectNode build(String target, Path export, Path out, CompileOptions opt) {
        if (!target.equals(MODEL_LIB) && !target.equals(CONTEXT_BINARY)) {
            throw new CompileException("unknown QNN SDK target '" + target + "'", "use " + MODEL_LIB + " or " + CONTEXT_BINARY);
        }
        ExportInfo info = ExportInfo.read(export);
        if (info.variant() != Variant.STATIC) {
            throw new CompileException("QNN needs the static export (fixed shapes); this one is " + info.variant().name().toLowerCase(),
                    "set export.variant: static");
        }
        Precision precision = Precision.recorded(info.precision());
        if (precision == null || !precision.quantizesActivations()) {
            throw new CompileException("the QNN converter needs every activation's encoding, and this export's activations are float ("
                    + (info.precision() == null ? "an export made before precisions were recorded" : info.precision()) + ")",
                    "quantize with quantize.activations: 16 (the default for a static export) and export again");
        }
        if (!Files.isRegularFile(export.resolve("encodings.json"))) {
            throw new CompileException("the export has no encodings.json (the quantization overrides the converter runs on): AIMET "
                    + "encodings 0.5.0 cannot express 4-bit groups of columns",
                    "quantize per channel (quantize.group: 0) for the QNN SDK targets, or compile with target ort-qnn");
        }
        Soc soc = Soc.resolve(opt.soc(), opt.htpArch());
        Path work = out.resolveSibling(out.getFileName() + ".work");
        ObjectNode manifest = JSON.createObjectNode();
        manifest.put("target", target);
        manifest.put("soc", soc.name());
        manifest.put("htpArch", soc.htpArch());
        manifest.put("contextLength", info.contextLength());
        manifest.put("promptLength", info.promptLength());
        manifest.put("qnnSdk", version());
        ObjectNode graphs = manifest.putObject("graphs");
        try {
            Files.createDirectories(out);
            Path encodings = export.resolve("encodings.json");
            for (Map.Entry<String, String> g : info.graphs().entrySet()) {
                String role = g.getKey();
                String name = role.replace('.', '_'); // a graph and library name is a C identifier
                Path dir = Files.createDirectories(work.resolve(name));
                GraphIo io = GraphIo.read(export.resolve(g.getValue()));
                List<String> conv = new ArrayList<>(List.of(tool(root, "qnn-onnx-converter").toString(),
                        "--input_network", export.resolve(g.getValue()).toString(), "--output_path", dir.resolve(name + ".cpp").toString()));
                for (GraphIo.Tensor t : io.inputs()) {
                    conv.addAll(List.of("--input_dim", t.name(), t.dimsArg()));
                }
                for (GraphIo.Tensor t : io.outputs()) {
                    conv.addAll(List.of("--out_node", t.name()));
                }
                conv.addAll(List.of("--quantization_overrides", encodings.toString()));
                conv.addAll(List.of("--act_bitwidth", String.valueOf(precision.activationBits()), "--weights_bitwidth",
                        String.valueOf(opt.weightBits())));
                run(conv, dir, "qnn-onnx-converter (" + name + ")");
                String triple = target.equals(MODEL_LIB) ? DEVICE : HOST;
                run(List.of(tool(root, "qnn-model-lib-generator").toString(), "-c", dir.resolve(name + ".cpp").toString(),
                        "-b", dir.resolve(name + ".bin").toString(), "-t", triple, "-o", dir.resolve("lib").toString()), dir,
                        "qnn-model-lib-generator (" + name + ")");
                Path lib = expect(dir.resolve("lib").resolve(triple).resolve("lib" + name + ".so"), "qnn-model-lib-generator");
                ObjectNode gj = graphs.putObject(role);
                if (target.equals(MODEL_LIB)) {
                    Files.copy(lib, out.resolve(lib.getFileName()));
                    gj.put("file", lib.getFileName().toString());
                } else {
                    Path config = htpConfig(dir, name, soc);
                    run(List.of(tool(root, "qnn-context-binary-generator").toString(), "--backend",
                            root.resolve("lib").resolve(HOST).resolve("libQnnHtp.so").toString(), "--model", lib.toString(),
                            "--binary_file", name, "--output_dir", out.toString(), "--config_file", config.toString()), dir,
                            "qnn-context-binary-generator (" + name + ")");
                    expect(out.resolve(name + ".bin"), "qnn-context-binary-generator");
                    gj.put("file", name + ".bin");
                }
                ObjectNode in = gj.putObject("inputs");
                io.inputs().forEach(t -> in.put(t.name(), t.dimsArg()));
                ObjectNode outs = gj.putObject("outputs");
                io.outputs().forEach(t -> outs.put(t.name(), t.dimsArg()));
            }
            for (String f : List.of("tokenizer.json", "tokenizer_config.json", ExportInfo.FILE)) {
                if (Files.isRegularFile(export.resolve(f))) {
                    Files.copy(export.resolve(f), out.resolve(f));
                }
            }
            Files.writeString(out.resolve(OrtQnnBundler.MANIFEST), JSON.writeValueAsString(manifest));
            return manifest;
        } catch (IOException e) {
            throw new CompileException("compiling into " + out + ": " + e.getMessage(), "check the compile service's disk", e);
        } finally {
            dev.hexforge.io.Folders.deleteQuietly(work);
        }
    }

    /** The HTP backend extension config naming the graph, the SoC and its architecture. */
    private static Path htpConfig(Path dir, String graph, Soc soc) throws IOException {
        ObjectNode ext = JSON.createObjectNode();
        ObjectNode g = ext.putArray("graphs").addObject();
        g.putArray("graph_names").add(graph);
        g.put("vtcm_mb", 8);
        g.put("O", 3);
        ObjectNode d = ext.putArray("devices").addObject();
        if (soc.qnnSocModel() > 0) {
            d.put("soc_model", soc.qnnSocModel());
        }
        d.put("dsp_arch", "v" + soc.htpArch());
        Path extFile = dir.resolve("htp_backend_ext.json");
        Files.writeString(extFile, JSON.writeValueAsString(ext));
        ObjectNode cfg = JSON.createObjectNode();
        ObjectNode be = cfg.putObject("backend_extensions");
        be.put("shared_library_path", "libQnnHtpNetRunExtensions.so");
        be.put("config_file_path", extFile.toString());
        Path file = dir.resolve("htp_config.json");
        Files.writeString(file, JSON.writeValueAsString(cfg));
        return file;
    }

    private static Path expect(Path file, String tool) {
        if (!Files.isRegularFile(file)) {
            throw new CompileException(tool + " reported success but wrote no " + file.getFileName(),
                    "check the QNN SDK installation (a tool of another SDK version?)");
        }
        return file;
    }

    private static void run(List<String> cmd, Path dir, String what) throws IOException {
        Path log = dir.resolve("tool.log");
        Process p = new ProcessBuilder(cmd).directory(dir.toFile()).redirectErrorStream(true).redirectOutput(log.toFile()).start();
        try {
            if (!p.waitFor(2, TimeUnit.HOURS)) {
                p.destroyForcibly();
                throw new CompileException(what + " did not finish in 2 hours", "check the compile service's resources");
            }
        } catch (InterruptedException e) {
            p.destroyForcibly();
            Thread.currentThread().interrupt();
            throw new CompileException(what + " was interrupted", "resume the job", e);
        }
        if (p.exitValue() != 0) {
            String out = Files.readString(log, StandardCharsets.UTF_8);
            String tail = out.length() > 2000 ? out.substring(out.length() - 2000) : out;
            QnnTriage.Diagnosis d = QnnTriage.explain(out).orElse(null);
            throw new CompileException(d != null ? d.code() : dev.hexforge.contracts.ErrorCode.COMPILE_FAILED, what + " failed (exit " + p.exitValue() + ")"
                    + (d != null ? ": " + d.cause() : "") + "\n" + tail.strip(), d != null ? d.fix() : "see the tool's output above", null);
        }
    }
}
