package dev.hexforge.onnx.export;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.hexforge.checkpoint.Checkpoint;
import dev.hexforge.checkpoint.ModelConfig;
import dev.hexforge.checkpoint.TensorNames;
import dev.hexforge.io.Folders;
import dev.hexforge.onnx.proto.Onnx.ModelProto;
import dev.hexforge.progress.Progress;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Exports a checkpoint to ONNX in one of two layouts, writing the weights once into {@code onnx/model.onnx_data}:
 * <ul>
 *   <li>dynamic: {@code onnx/model.onnx} plus genai_config.json, config and tokenizer files, loadable by
 *       onnxruntime-genai and transformers.js unchanged;</li>
 *   <li>static: {@code onnx/prompt.onnx} and {@code onnx/token.onnx} sharing the weights file; a model whose
 *       graphs would exceed the per-graph limit is split by layers into {@code prompt_part0.onnx}... and
 *       {@code token_part0.onnx}... (roles {@code prompt.0}, {@code token.0}...), see {@link GraphParts}.</li>
 * </ul>
 * The folder is built beside the destination and moved into place only when complete.
 */
public final class DecoderExporter {
    public static final String WEIGHTS = "model.onnx_data";
    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

    private DecoderExporter() {
    }

    public static ExportInfo export(Checkpoint ckpt, Path out, ExportOptions opt, Progress progress) {
        return export(ckpt, out, opt, LinearFormat.FLOAT, progress);
    }

    /** Exports with the linears stored and computed as {@code format} says (float, QDQ, MatMulNBits). */
    public static ExportInfo export(Checkpoint ckpt, Path out, ExportOptions opt, LinearFormat format, Progress progress) {
        if (!Folders.isMissingOrEmpty(out)) {
            throw new ExportException(out + " already exists and is not empty; choose another --out or remove it");
        }
        Path parent = out.toAbsolutePath().getParent();
        Path tmp;
        try {
            Files.createDirectories(parent);
            tmp = Files.createTempDirectory(parent, "." + out.getFileName() + ".partial-");
        } catch (IOException e) {
            throw new ExportException("cannot create a working folder next to " + out + ": " + e.getMessage(), e);
        }
        try {
            ExportInfo info = writeInto(ckpt, tmp, opt, format, progress);
            Files.deleteIfExists(out);
            Files.move(tmp, out, StandardCopyOption.ATOMIC_MOVE);
            return info;
        } catch (IOException e) {
            Folders.deleteQuietly(tmp);
            throw new ExportException("export to " + out + " failed: " + e.getMessage(), e);
        } catch (RuntimeException e) {
            Folders.deleteQuietly(tmp);
            throw e;
        }
    }

    private static ExportInfo writeInto(Checkpoint ckpt, Path dir, ExportOptions opt, LinearFormat format, Progress progress)
            throws IOException {
        ModelConfig c = ckpt.config();
        int opset = Math.max(opt.opset(), format.minOpset());
        Path onnxDir = Files.createDirectories(dir.resolve("onnx"));
        boolean isStatic = opt.variant() == Variant.STATIC;
        int ropePositions = isStatic ? opt.contextLength() : c.maxPositionEmbeddings();
        WeightFile weights = WeightFile.write(ckpt, onnxDir.resolve(WEIGHTS), ropePositions, format, progress);
        Map<String, String> meta = Map.of("hexforge.variant", opt.variant().name().toLowerCase(),
                "hexforge.source", ckpt.name());
        Map<String, String> graphs = new LinkedHashMap<>();
        if (isStatic) {
            List<GraphParts.Part> parts = GraphParts.plan(c, weights, opt.maxGraphBytes());
            for (String kind : List.of("prompt", "token")) {
                int seq = kind.equals("prompt") ? opt.promptLength() : 1;
                for (int p = 0; p < parts.size(); p++) {
                    String role = parts.size() == 1 ? kind : kind + "." + p;
                    String file = (parts.size() == 1 ? kind : kind + "_part" + p) + ".onnx";
                    writeModel(DecoderGraph.fixedPart(c, weights, format, opset, seq, opt.contextLength(), role, meta, parts.get(p)),
                            onnxDir.resolve(file));
                    graphs.put(role, "onnx/" + file);
                }
            }
        } else {
            writeModel(DecoderGraph.dynamic(c, weights, format, opset, meta), onnxDir.resolve("model.onnx"));
            graphs.put("model", "onnx/model.onnx");
        }
        ckpt.copySideFiles(dir);
        if (!isStatic) {
            markExternalDataForTransformersJs(dir.resolve("config.json"));
        }
        if (!Files.exists(dir.resolve("generation_config.json"))) {
            writeGenerationConfig(c, dir);
        }
        if (!isStatic) {
            writeGenaiConfig(c, dir);
        }
        ExportInfo info = new ExportInfo(1, opt.variant(), opset, graphs, "onnx/" + WEIGHTS,
                isStatic ? opt.promptLength() : 0, isStatic ? opt.contextLength() : 0, DecoderGraph.MASK_NEGATIVE,
                c.numLayers(), c.numKvHeads(), c.headDim(), c.vocabSize(), c.maxPositionEmbeddings(), c.eosTokenIds(),
                ckpt.name(), c.tieWordEmbeddings() ? 0 : GraphParts.bytes(weights.stored(), TensorNames.EMBED),
                isStatic ? null : DecoderGraph.LOGITS_FROM, ExportInfo.HEXFORGE_VERSION);
        info.write(dir);
        return info;
    }

    /** transformers.js loads {@code onnx/model.onnx_data} only when config.json says the weights are external. */
    private static void markExternalDataForTransformersJs(Path config) throws IOException {
        ObjectNode cfg = (ObjectNode) JSON.readTree(config.toFile());
        String key = "transformers.js_config";
        ObjectNode tjs = cfg.get(key) instanceof ObjectNode existing ? existing : cfg.putObject(key);
        tjs.put("use_external_data_format", true);
        tjs.put("dtype", "fp32");
        JSON.writeValue(config.toFile(), cfg);
    }

    private static void writeModel(ModelProto model, Path file) throws IOException {
        try (OutputStream os = Files.newOutputStream(file)) {
            model.writeTo(os);
        }
    }

    private static void writeGenerationConfig(ModelConfig c, Path dir) throws IOException {
        ObjectNode g = JSON.createObjectNode();
        g.put("bos_token_id", c.bosTokenId());
        ArrayNode eos = g.putArray("eos_token_id");
        c.eosTokenIds().forEach(eos::add);
        g.put("do_sample", false);
        JSON.writeValue(dir.resolve("generation_config.json").toFile(), g);
    }

    /** onnxruntime-genai's config for the dynamic decoder. */
    private static void writeGenaiConfig(ModelConfig c, Path dir) throws IOException {
        ObjectNode root = JSON.createObjectNode();
        ObjectNode model = root.putObject("model");
        model.put("bos_token_id", c.bosTokenId());
        model.put("context_length", c.maxPositionEmbeddings());
        ArrayNode eos = model.putArray("eos_token_id");
        c.eosTokenIds().forEach(eos::add);
        model.put("pad_token_id", c.eosTokenIds().isEmpty() ? 0 : c.eosTokenIds().get(0));
        model.put("type", c.architecture().modelType());
        model.put("vocab_size", c.vocabSize());
        ObjectNode dec = model.putObject("decoder");
        dec.put("filename", "onnx/model.onnx");
        dec.put("head_size", c.headDim());
        dec.put("hidden_size", c.hiddenSize());
        dec.put("num_attention_heads", c.numHeads());
        dec.put("num_hidden_layers", c.numLayers());
        dec.put("num_key_value_heads", c.numKvHeads());
        ObjectNode in = dec.putObject("inputs");
        in.put("input_ids", "input_ids");
        in.put("attention_mask", "attention_mask");
        in.put("position_ids", "position_ids");
        in.put("past_key_names", "past_key_values.%d.key");
        in.put("past_value_names", "past_key_values.%d.value");
        ObjectNode outs = dec.putObject("outputs");
        outs.put("logits", "logits");
        outs.put("present_key_names", "present.%d.key");
        outs.put("present_value_names", "present.%d.value");
        dec.putObject("session_options").putArray("provider_options");
        ObjectNode search = root.putObject("search");
        search.put("do_sample", false);
        search.put("max_length", c.maxPositionEmbeddings());
        search.put("min_length", 0);
        search.put("num_beams", 1);
        search.put("num_return_sequences", 1);
        search.put("past_present_share_buffer", false);
        search.put("repetition_penalty", 1.0);
        search.put("temperature", 1.0);
        search.put("top_k", 1);
        search.put("top_p", 1.0);
        JSON.writeValue(dir.resolve("genai_config.json").toFile(), root);
    }


}
