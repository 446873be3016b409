package dev.hexforge.compile;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.hexforge.compile.genie.GenieBundle;
import dev.hexforge.contracts.ErrorCode;
import dev.hexforge.contracts.NpuLimits;
import dev.hexforge.io.Folders;
import dev.hexforge.onnx.export.ExportInfo;
import dev.hexforge.onnx.export.Variant;
import dev.hexforge.onnx.qnn.Precision;
import dev.hexforge.onnx.qnn.QnnPreflight;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
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
 *       an HTP configuration for the SoC: one {@code <graph>.bin} context per graph;</li>
 *   <li>{@code genie}: from a Genie export, the host libraries of each part's prompt and token graphs into one
 *       context binary per part with weight sharing, and the files Genie loads beside them ({@link GenieBundle}).</li>
 * </ul>
 * An export whose activations are float, or without encodings, is refused before any tool runs: the converter has no
 * input list to calibrate from, so it would leave them float, which the HTP does not run. A failing tool's output goes
 * through {@link QnnTriage}, so the error names the cause (a node, an input) and the fix.
 */
public final class QnnSdk {
    public static final String MODEL_LIB = "qnn-model-lib";
    public static final String CONTEXT_BINARY = "qnn-context-binary";
    /** A Genie bundle: see {@link GenieBundle}. */
    public static final String GENIE = "genie";
    public static final List<String> TARGETS = List.of(CONTEXT_BINARY, MODEL_LIB, GENIE);
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
        if (!TARGETS.contains(target)) {
            throw new CompileException("unknown QNN SDK target '" + target + "'", "use one of " + TARGETS);
        }
        ExportInfo info = ExportInfo.read(export);
        boolean genie = target.equals(GENIE);
        Variant needed = genie ? Variant.GENIE : Variant.STATIC;
        if (info.variant() != needed) {
            throw new CompileException("target " + target + " needs the " + needed.id() + " export"
                    + (genie ? " (Genie's graph layout)" : " (fixed shapes)") + "; this one is " + info.variant().id(),
                    "export again with export.variant: " + needed.id() + ", or quantize with compile.target: " + target
                            + ", which chooses the layout and precision the target needs");
        }
        Precision precision = Precision.recorded(info.precision());
        if (precision == null || !precision.quantizesActivations()) {
            throw new CompileException("the QNN converter needs every activation's encoding, and this export's activations are float ("
                    + (info.precision() == null ? "an export made before precisions were recorded" : info.precision()) + ")",
                    "quantize with quantize.activations: 16 (the default for a static export) and export again");
        }
        if (info.quantizedIo()) {
            throw new CompileException("the export's graphs take quantized inputs and outputs, which is the ort-qnn bundle's "
                    + "form: the QNN converter gives a context's inputs and outputs their quantized types itself",
                    "quantize without quantize.quantizeIo for target " + target + ", or compile with target ort-qnn");
        }
        Path encodings = export.resolve("encodings.json");
        if (!Files.isRegularFile(encodings)) {
            throw new CompileException("the export has no encodings.json (the quantization overrides the converter runs on): AIMET "
                    + "encodings 0.5.0 cannot express weights in groups of columns, which this model's are",
                    "quantize per channel with an int8 head (quantize.group: 0, quantize.head: int8; compile.target " + target
                            + " chooses them when given to the quantize), or compile with target ort-qnn");
        }
        JsonNode activations = activationEncodings(encodings);
        Soc soc = Soc.resolve(opt.soc(), opt.htpArch());
        // a Genie bundle's config files are made before any tool runs: what they refuse is refused in seconds
        GenieBundle bundle = genie ? GenieBundle.plan(export, info, soc, opt.sampler()) : null;
        Path work = out.resolveSibling(out.getFileName() + ".work");
        ObjectNode manifest = JSON.createObjectNode();
        manifest.put("target", target);
        manifest.put("soc", soc.name());
        manifest.put("htpArch", soc.htpArch());
        manifest.put("contextLength", info.contextLength());
        manifest.put("promptLength", info.promptLength());
        if (genie) {
            // what one dialog holds, prompt and generated tokens together: the device runner refuses a run over it
            manifest.put("dialogTokens", NpuLimits.genieDialogTokens(info.contextLength(), info.promptLength()));
        }
        manifest.put("precision", info.precision());
        manifest.put("qnnSdk", version());
        ObjectNode graphs = manifest.putObject("graphs");
        try {
            Files.createDirectories(out);
            String triple = target.equals(MODEL_LIB) ? DEVICE : HOST;
            Map<String, Path> libs = new LinkedHashMap<>();
            Map<String, String> names = new LinkedHashMap<>();
            Map<String, GraphIo> ios = new LinkedHashMap<>();
            for (Map.Entry<String, String> g : info.graphs().entrySet()) {
                String role = g.getKey();
                String name = graphName(info, role);
                Path dir = Files.createDirectories(work.resolve(name));
                Path graph = export.resolve(g.getValue());
                GraphIo io = GraphIo.read(graph);
                names.put(role, name);
                ios.put(role, io);
                List<String> conv = new ArrayList<>(List.of(tool(root, "qnn-onnx-converter").toString(),
                        "--input_network", graph.toString(), "--output_path", dir.resolve(name + ".cpp").toString()));
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
                run(List.of(tool(root, "qnn-model-lib-generator").toString(), "-c", dir.resolve(name + ".cpp").toString(),
                        "-b", dir.resolve(name + ".bin").toString(), "-t", triple, "-o", dir.resolve("lib").toString()), dir,
                        "qnn-model-lib-generator (" + name + ")");
                Path lib = expect(dir.resolve("lib").resolve(triple).resolve("lib" + name + ".so"), "qnn-model-lib-generator");
                libs.put(role, lib);
                ObjectNode gj = graphs.putObject(role);
                gj.put("name", name);
                if (target.equals(MODEL_LIB)) {
                    Files.copy(lib, out.resolve(lib.getFileName()));
                    gj.put("file", lib.getFileName().toString());
                } else if (target.equals(CONTEXT_BINARY)) {
                    contextBinary(List.of(lib), List.of(name), name, out, soc, dir);
                    gj.put("file", name + ".bin");
                }
                gj.put("weightBytes", QnnPreflight.check(graph, precision).weightBytes());
                ObjectNode in = gj.putObject("inputs");
                io.inputs().forEach(t -> in.put(t.name(), t.dimsArg()));
                ObjectNode outs = gj.putObject("outputs");
                io.outputs().forEach(t -> outs.put(t.name(), t.dimsArg()));
            }
            if (genie) {
                // each part's prompt and token graphs in one context binary, sharing the part's weights
                for (int p = 0; p < bundle.parts(); p++) {
                    String prompt = "prompt." + p;
                    String token = "token." + p;
                    Path dir = Files.createDirectories(work.resolve("part" + p));
                    contextBinary(List.of(libs.get(prompt), libs.get(token)), List.of(names.get(prompt), names.get(token)),
                            bundle.binaryName(p), out, soc, dir);
                    ((ObjectNode) graphs.get(prompt)).put("file", bundle.contextBinary(p));
                    ((ObjectNode) graphs.get(token)).put("file", bundle.contextBinary(p));
                }
                bundle.write(out, manifest, version(), names, ios, activations);
            } else {
                for (String f : List.of("tokenizer.json", "tokenizer_config.json")) {
                    if (Files.isRegularFile(export.resolve(f))) {
                        Files.copy(export.resolve(f), out.resolve(f));
                    }
                }
            }
            manifest.set("deviceMemory", deviceMemory(info, graphs, activations, genie));
            // the host's answers a device's run is checked against, when the export has them
            if (Files.isRegularFile(export.resolve("reference.json"))) {
                Files.copy(export.resolve("reference.json"), out.resolve("reference.json"));
            }
            Files.copy(export.resolve(ExportInfo.FILE), out.resolve(ExportInfo.FILE));
            Files.writeString(out.resolve(OrtQnnBundler.MANIFEST), JSON.writeValueAsString(manifest));
            return manifest;
        } catch (IOException e) {
            throw new CompileException("compiling into " + out + ": " + e.getMessage(), "check the compile service's disk", e);
        } finally {
            Folders.deleteQuietly(work);
        }
    }

    /**
     * What the bundle holds in the device's memory: every graph's weights, a Genie part's once for its two graphs
     * (they share them in one context), and the KV cache of every layer over the context at the cache's bit width.
     */
    static ObjectNode deviceMemory(ExportInfo info, ObjectNode graphs, JsonNode activations, boolean shared) {
        long weights = 0;
        long unshared = 0;
        for (var e : graphs.properties()) {
            long w = e.getValue().path("weightBytes").asLong();
            unshared += w;
            if (!shared || !e.getKey().startsWith("token")) {
                weights += w;
            }
        }
        JsonNode kv = activations.has("present.0.key") ? activations.path("present.0.key") : activations.path("past_key_0_in");
        int kvBits = kv.path(0).path("bitwidth").asInt(8);
        long kvBytes = 2L * info.numLayers() * info.numKvHeads() * info.contextLength() * info.headDim() * kvBits / 8;
        ObjectNode m = JSON.createObjectNode();
        m.put("weightBytes", weights);
        m.put("weightsShared", shared);
        m.put("weightBytesUnshared", unshared);
        m.put("kvCacheBytes", kvBytes);
        m.put("kvBits", kvBits);
        m.put("totalBytes", weights + kvBytes);
        return m;
    }

    /** The {@code activation_encodings} of the export's AIMET encodings, by tensor name. */
    private static JsonNode activationEncodings(Path encodings) {
        try {
            return JSON.readTree(encodings.toFile()).path("activation_encodings");
        } catch (IOException e) {
            throw new CompileException("the export's encodings.json is unreadable: " + e.getMessage(), "export the model again", e);
        }
    }

    /**
     * The name the SDK's tools give a graph: the stem of the converter's output and of its model library. A Genie
     * export's file stems are already Genie's graph names; a static export's roles become C identifiers.
     */
    static String graphName(ExportInfo info, String role) {
        if (info.variant() == Variant.GENIE) {
            String file = Path.of(info.graphs().get(role)).getFileName().toString();
            return file.substring(0, file.length() - ".onnx".length());
        }
        return role.replace('.', '_');
    }

    /**
     * One {@code qnn-context-binary-generator} call: {@code names} (the graphs of {@code libs}, in order) into
     * {@code out/<binary>.bin}; several graphs in one context share their weights, which the backend config enables.
     */
    private void contextBinary(List<Path> libs, List<String> names, String binary, Path out, Soc soc, Path dir) throws IOException {
        Path config = htpConfig(dir, names, soc);
        run(List.of(tool(root, "qnn-context-binary-generator").toString(), "--backend",
                root.resolve("lib").resolve(HOST).resolve("libQnnHtp.so").toString(), "--model",
                String.join(",", libs.stream().map(Path::toString).toList()), "--binary_file", binary, "--output_dir", out.toString(),
                "--config_file", config.toString()), dir, "qnn-context-binary-generator (" + binary + ")");
        expect(out.resolve(binary + ".bin"), "qnn-context-binary-generator");
    }

    /** The HTP backend extension config naming the graphs, the SoC and its architecture, and weight sharing for several. */
    private static Path htpConfig(Path dir, List<String> graphs, Soc soc) throws IOException {
        ObjectNode ext = JSON.createObjectNode();
        ObjectNode g = ext.putArray("graphs").addObject();
        graphs.forEach(g.putArray("graph_names")::add);
        g.put("vtcm_mb", 8);
        g.put("O", 3);
        ObjectNode d = ext.putArray("devices").addObject();
        if (soc.qnnSocModel() > 0) {
            d.put("soc_model", soc.qnnSocModel());
        }
        d.put("dsp_arch", "v" + soc.htpArch());
        if (graphs.size() > 1) {
            ext.putObject("context").put("weight_sharing_enabled", true);
        }
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
            throw new CompileException(d != null ? d.code() : ErrorCode.COMPILE_FAILED, what + " failed (exit " + p.exitValue() + ")"
                    + (d != null ? ": " + d.cause() : "") + "\n" + tail.strip(), d != null ? d.fix() : "see the tool's output above", null);
        }
    }
}
