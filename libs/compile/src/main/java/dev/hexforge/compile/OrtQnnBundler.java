package dev.hexforge.compile;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.hexforge.io.Folders;
import dev.hexforge.onnx.export.ExportInfo;
import dev.hexforge.onnx.export.Variant;
import dev.hexforge.onnx.qnn.Precision;
import dev.hexforge.onnx.qnn.QnnPreflight;
import dev.hexforge.onnx.runtime.OrtSessions;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The {@code ort-qnn} target: a bundle ONNX Runtime's QNN execution provider runs — the static export's prompt and
 * token graphs with their weights and tokenizer, a {@code genai_config.json} in the decoder-pipeline form with the QNN
 * provider options (CPU fallback disabled, so an op that would leave the NPU fails loudly), and a
 * {@code manifest.json} naming the target, graphs, quantization and tool versions. Every graph passes the QNN
 * pre-flight first. A model too big for one NPU graph arrives already split by the export into parts
 * ({@code prompt.0}, {@code prompt.1}... under the 2 GB per-graph limit): they become the stages of the decoder
 * pipeline in order, each feeding its hidden states to the next.
 */
public final class OrtQnnBundler {
    public static final String TARGET = "ort-qnn";
    public static final String MANIFEST = "manifest.json";
    public static final String GENAI_CONFIG = "genai_config.json";
    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

    private OrtQnnBundler() {
    }

    public static ObjectNode build(Path export, Path out, CompileOptions opt) {
        if (!ExportInfo.isExport(export)) {
            throw new CompileException("the compile input is not an ONNX export (no " + ExportInfo.FILE + ")",
                    "put the export stage before compile");
        }
        ExportInfo info = ExportInfo.read(export);
        if (info.variant() != Variant.STATIC) {
            throw new CompileException("the " + TARGET + " target needs the static export (fixed shapes for the NPU); this one is "
                    + info.variant().name().toLowerCase(), "set export.variant: static");
        }
        Soc soc = Soc.resolve(opt.soc(), opt.htpArch());
        Map<String, QnnPreflight.Report> preflight = new LinkedHashMap<>();
        Map<String, GraphIo> io = new LinkedHashMap<>();
        for (Map.Entry<String, String> g : info.graphs().entrySet()) {
            Path graph = export.resolve(g.getValue());
            QnnPreflight.Report r = QnnPreflight.check(graph, Precision.recorded(info.precision()));
            preflight.put(g.getKey(), r);
            if (!r.clean()) {
                boolean tooBig = r.weightBytes() > r.weightLimitBytes();
                throw new CompileException("the " + g.getKey() + " graph cannot run on the HTP: " + String.join("; ", r.problems()),
                        tooBig ? "export it again with this version: the static export splits graphs over the limit into parts"
                                : "export with the static variant and a QDQ quantization (quantize.format: qdq)");
            }
            io.put(g.getKey(), GraphIo.read(graph));
        }
        try {
            Folders.copyTree(export, out);
            ObjectNode provider = JSON.createObjectNode();
            provider.put("backend_path", "libQnnHtp.so");
            provider.put("htp_performance_mode", opt.performanceMode());
            provider.put("soc_model", soc.name());
            provider.put("htp_arch", String.valueOf(soc.htpArch()));
            provider.put("htp_graph_finalization_optimization_mode", "3");
            Files.writeString(out.resolve(GENAI_CONFIG), JSON.writeValueAsString(genaiConfig(info, io, provider)));
            ObjectNode manifest = manifest(info, soc, io, preflight, provider);
            Files.writeString(out.resolve(MANIFEST), JSON.writeValueAsString(manifest));
            return manifest;
        } catch (IOException e) {
            throw new CompileException("writing the bundle to " + out + ": " + e.getMessage(), "check the disk of the compile service", e);
        }
    }

    private static ObjectNode genaiConfig(ExportInfo info, Map<String, GraphIo> io, ObjectNode provider) {
        ObjectNode root = JSON.createObjectNode();
        ObjectNode model = root.putObject("model");
        model.put("type", "decoder-pipeline");
        model.put("context_length", info.contextLength());
        model.put("vocab_size", info.vocabSize());
        ArrayNode eos = model.putArray("eos_token_id");
        info.eosTokenIds().forEach(eos::add);
        ObjectNode dec = model.putObject("decoder");
        dec.put("head_size", info.headDim());
        dec.put("num_hidden_layers", info.numLayers());
        dec.put("num_key_value_heads", info.numKvHeads());
        ObjectNode so = dec.putObject("session_options");
        so.put("log_id", "hexforge");
        so.putArray("provider_options").addObject().set("qnn", provider);
        so.putObject("config_entries").put("session.disable_cpu_ep_fallback", "1");
        ArrayNode pipeline = dec.putArray("pipeline");
        for (Map.Entry<String, String> g : info.graphs().entrySet()) {
            ObjectNode stage = pipeline.addObject().putObject(g.getKey());
            stage.put("filename", g.getValue());
            ArrayNode in = stage.putArray("inputs");
            io.get(g.getKey()).inputs().forEach(t -> in.add(t.name()));
            ArrayNode outs = stage.putArray("outputs");
            io.get(g.getKey()).outputs().forEach(t -> outs.add(t.name()));
            boolean prompt = g.getKey().equals("prompt") || g.getKey().startsWith("prompt.");
            stage.put("run_on_prompt", prompt);
            stage.put("run_on_token_gen", !prompt);
        }
        ObjectNode search = root.putObject("search");
        search.put("max_length", info.contextLength());
        search.put("do_sample", false);
        return root;
    }

    private static ObjectNode manifest(ExportInfo info, Soc soc, Map<String, GraphIo> io, Map<String, QnnPreflight.Report> pre,
                                       ObjectNode provider) {
        ObjectNode m = JSON.createObjectNode();
        m.put("target", TARGET);
        m.put("soc", soc.name());
        m.put("socName", soc.marketing());
        m.put("htpArch", soc.htpArch());
        m.put("contextLength", info.contextLength());
        m.put("promptLength", info.promptLength());
        ObjectNode graphs = m.putObject("graphs");
        info.graphs().forEach((role, file) -> {
            ObjectNode g = graphs.putObject(role);
            g.put("file", file);
            g.put("weightBytes", pre.get(role).weightBytes());
            ObjectNode in = g.putObject("inputs");
            io.get(role).inputs().forEach(t -> in.put(t.name(), t.dimsArg()));
            ObjectNode out = g.putObject("outputs");
            io.get(role).outputs().forEach(t -> out.put(t.name(), t.dimsArg()));
            if (info.quantizedIo()) {
                // what an application feeds and reads: real = (q - zeroPoint) * scale
                ObjectNode enc = g.putObject("quantizedIo");
                io.get(role).quantized().forEach((name, b) -> enc.putObject(name).put("type", b.type().name().toLowerCase())
                        .put("scale", b.scale()).put("zeroPoint", b.zeroPoint()));
            }
            List<String> ops = new ArrayList<>();
            pre.get(role).ops().forEach(o -> ops.add(o.opType() + "x" + o.count()));
            g.putPOJO("ops", ops);
        });
        boolean qdq = pre.values().stream().anyMatch(r -> r.ops().stream().anyMatch(o -> o.opType().equals("DequantizeLinear")));
        m.put("linearFormat", qdq ? "qdq" : "float");
        // QDQ graphs, not precompiled contexts: the phone's QNN provider compiles them when a session first opens them
        m.put("compiledOnDevice", "at the first load of each graph (minutes for a 1.5B model), by ONNX Runtime's QNN provider");
        m.put("precision", info.precision());
        m.put("quantizedIo", info.quantizedIo());
        if (info.lora() != null) {
            // the graphs take LoRA inputs; each adapter file holds every one of them, fed by ONNX Runtime's adapters
            // (OrtLoraAdapter with RunOptions.addActiveLoraAdapter; onnxruntime-genai's Adapters and SetActiveAdapter)
            ObjectNode lora = m.putObject("lora");
            lora.put("rank", info.lora().rank());
            lora.putPOJO("modules", info.lora().modules());
            ObjectNode adapters = lora.putObject("adapters");
            info.lora().adapters().forEach(adapters::put);
        }
        m.put("source", info.source());
        m.set("providerOptions", provider);
        m.putObject("sessionConfig").put("session.disable_cpu_ep_fallback", "1");
        ObjectNode tools = m.putObject("tools");
        tools.put("hexforge", info.hexforgeVersion());
        tools.put("onnxOpset", info.opset());
        tools.put("onnxRuntime", OrtSessions.runtimeVersion());
        return m;
    }
}
