package dev.hexforge.onnx.export;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.hexforge.checkpoint.Checkpoint;
import dev.hexforge.checkpoint.ModelConfig;
import dev.hexforge.checkpoint.TensorNames;
import dev.hexforge.io.Folders;
import dev.hexforge.onnx.lora.LoraInputs;
import dev.hexforge.onnx.proto.Onnx.ModelProto;
import dev.hexforge.onnx.qdq.ActivationEncodings;
import dev.hexforge.onnx.qdq.ActivationQdq;
import dev.hexforge.onnx.qdq.QuantizedIo;
import dev.hexforge.progress.Progress;

import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
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
 *       {@code token_part0.onnx}... (roles {@code prompt.0}, {@code token.0}...), see {@link GraphParts};</li>
 *   <li>genie: the static graphs in Genie's interface, always in parts (the embedding the first), each graph in a file
 *       named as Genie knows it, {@code onnx/prompt_ar128_cl4096_1_of_4.onnx}... (roles {@code prompt.0}...), see
 *       {@link GenieIo}.</li>
 * </ul>
 * The folder is built beside the destination and moved into place only when complete.
 */
public final class DecoderExporter {
    public static final String WEIGHTS = "model.onnx_data";
    /** The value a static caller puts in masked attention_mask entries (export.json's maskNegative). */
    public static final float MASK_NEGATIVE = DecoderGraph.MASK_NEGATIVE;
    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

    private DecoderExporter() {
    }

    public static ExportInfo export(Checkpoint ckpt, Path out, ExportOptions opt, Progress progress) {
        return export(ckpt, out, opt, LinearFormat.FLOAT, progress);
    }

    /** Exports with the linears stored and computed as {@code format} says (float, QDQ, MatMulNBits). */
    public static ExportInfo export(Checkpoint ckpt, Path out, ExportOptions opt, LinearFormat format, Progress progress) {
        return export(ckpt, out, opt, format, null, progress);
    }

    /**
     * As {@link #export(Checkpoint, Path, ExportOptions, LinearFormat, Progress)}; with {@code activations}, a static
     * export's graphs are fully quantized ({@link ActivationQdq}: every activation at its calibrated encoding). A
     * dynamic export ignores them: the CPU graph keeps float activations.
     */
    public static ExportInfo export(Checkpoint ckpt, Path out, ExportOptions opt, LinearFormat format,
                                    ActivationEncodings activations, Progress progress) {
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
            ExportInfo info = writeInto(ckpt, tmp, opt, format, activations, null, WeightJournal.NONE, progress);
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

    /**
     * As {@link #export(Checkpoint, Path, ExportOptions, LinearFormat, ActivationEncodings, Progress)}, into
     * {@code dir}, a folder the caller owns and moves into place: the weights file an interrupted export left there
     * is continued after the groups of tensors {@code journal} holds, every other file is written again (graphs and
     * side files are small), and the folder ends with the bytes of an export written whole. With {@code lora}, the
     * graphs take those LoRA inputs ({@link LoraInputs}; the caller writes the adapter files); the weights file is
     * the same bytes as without.
     */
    public static ExportInfo exportInto(Checkpoint ckpt, Path dir, ExportOptions opt, LinearFormat format,
                                        ActivationEncodings activations, LoraInputs lora, WeightJournal journal,
                                        Progress progress) {
        try {
            Files.createDirectories(dir);
            return writeInto(ckpt, dir, opt, format, activations, lora, journal, progress);
        } catch (IOException e) {
            throw new ExportException("export to " + dir + " failed: " + e.getMessage(), e);
        }
    }

    private static ExportInfo writeInto(Checkpoint ckpt, Path dir, ExportOptions opt, LinearFormat format,
                                        ActivationEncodings activations, LoraInputs lora, WeightJournal journal,
                                        Progress progress) throws IOException {
        ModelConfig c = ckpt.config();
        boolean isStatic = opt.variant().fixedShapes();
        boolean genie = opt.variant() == Variant.GENIE;
        if (genie && opt.contextLength() > c.maxPositionEmbeddings()) {
            throw new ExportException("context length " + opt.contextLength() + " is over the model's max_position_embeddings ("
                    + c.maxPositionEmbeddings() + "): Genie's RoPE covers the positions the model was trained for; lower export.ctx");
        }
        ActivationEncodings act = !isStatic || activations == null ? null
                : genie ? GenieIo.encodings(activations, c.numLayers()) : activations;
        if (act != null && lora != null) {
            for (int l = 0; l < c.numLayers(); l++) {
                for (var linear : lora.linears()) {
                    if (!act.tensors().containsKey(LoraInputs.nameA(l, linear))) {
                        throw new ExportException("the checkpoint's activation encodings were calibrated without LoRA adapters on "
                                + linear.shortName() + " (no encoding for " + LoraInputs.nameA(l, linear) + "): quantize with the "
                                + "same --adapter flags as the export, so the adapters' inputs and products have encodings");
                    }
                }
            }
        }
        if (genie && lora != null) {
            throw new ExportException("LoRA adapters on Genie's graphs are not supported yet (Genie applies adapters as the "
                    + "QAIRT tools' LoRA binary sections); export them in the static layout (ort-qnn) or the dynamic one");
        }
        boolean quantizedIo = act != null && act.settings().quantizedIo();
        if (quantizedIo && genie) {
            throw new ExportException("quantized inputs and outputs (quantize.quantizeIo) are for the static layout: the QNN "
                    + "converter gives Genie's graphs quantized inputs and outputs itself (metadata.json lists their encodings)");
        }
        int opset = Math.max(Math.max(opt.opset(), format.minOpset()), act != null ? ActivationQdq.OPSET : 0);
        Path onnxDir = Files.createDirectories(dir.resolve("onnx"));
        // Genie's graphs take each position's cos / sin as inputs: no tables
        int ropePositions = genie ? 0 : isStatic ? opt.contextLength() : c.maxPositionEmbeddings();
        WeightFile weights = WeightFile.write(ckpt, onnxDir.resolve(WEIGHTS), ropePositions, format, progress, journal);
        Map<String, String> meta = new LinkedHashMap<>(Map.of("hexforge.variant", opt.variant().id(),
                "hexforge.source", ckpt.name()));
        if (act != null) {
            meta.put("hexforge.activations", act.settings().id());
            meta.put("hexforge.kv_bits", Integer.toString(act.settings().kvBits()));
            meta.put("hexforge.quantized_io", Boolean.toString(quantizedIo));
        }
        Map<String, String> graphs = new LinkedHashMap<>();
        if (isStatic) {
            List<GraphParts.Part> parts = GraphParts.plan(c, weights, opt.maxGraphBytes(), genie);
            for (String kind : List.of("prompt", "token")) {
                boolean prompt = kind.equals("prompt");
                int seq = prompt ? opt.promptLength() : 1;
                for (int p = 0; p < parts.size(); p++) {
                    String role = parts.size() == 1 ? kind : kind + "." + p;
                    String name = genie ? GenieIo.graphName(prompt, seq, opt.contextLength(), p, parts.size()) : role;
                    String file = (genie ? name : parts.size() == 1 ? kind : kind + "_part" + p) + ".onnx";
                    ModelProto graph = DecoderGraph.fixedPart(c, weights, format, opset, seq, opt.contextLength(), name, meta,
                            parts.get(p), opt.variant(), lora);
                    if (act != null) {
                        graph = ActivationQdq.apply(graph, act.tensors(), n -> readFloats(onnxDir, weights.get(n)));
                        if (quantizedIo) {
                            graph = QuantizedIo.apply(graph);
                        }
                    }
                    writeModel(graph, onnxDir.resolve(file));
                    graphs.put(role, "onnx/" + file);
                }
            }
        } else {
            writeModel(DecoderGraph.dynamic(c, weights, format, opset, meta, lora), onnxDir.resolve("model.onnx"));
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
                isStatic ? null : DecoderGraph.LOGITS_FROM, ExportInfo.HEXFORGE_VERSION, precision(format, act), quantizedIo, lora);
        info.write(dir);
        return info;
    }

    /**
     * Calibration graphs: the weights into {@code dir/onnx/model.onnx_data} and one static prompt graph of
     * {@code seq} tokens over {@code context} positions per decoder layer (the first with the embedding, the last with
     * the final norm and head), each returning every float activation as an output under its name in the full
     * graphs. In layer order.
     */
    public static List<Path> writeCalibrationParts(Checkpoint ckpt, Path dir, LinearFormat format, int seq, int context,
                                                   Progress progress) throws IOException {
        return writeCalibrationParts(ckpt, dir, format, seq, context, null, progress);
    }

    /** As {@link #writeCalibrationParts(Checkpoint, Path, LinearFormat, int, int, Progress)}, taking {@code lora}'s inputs (null: none). */
    public static List<Path> writeCalibrationParts(Checkpoint ckpt, Path dir, LinearFormat format, int seq, int context,
                                                   LoraInputs lora, Progress progress) throws IOException {
        ModelConfig c = ckpt.config();
        int opset = Math.max(Math.max(ExportOptions.DEFAULT_OPSET, format.minOpset()), ActivationQdq.OPSET);
        Path onnxDir = Files.createDirectories(dir.resolve("onnx"));
        WeightFile weights = WeightFile.write(ckpt, onnxDir.resolve(WEIGHTS), context, format, progress);
        List<Path> parts = new ArrayList<>();
        for (int l = 0; l < c.numLayers(); l++) {
            GraphParts.Part part = new GraphParts.Part(l, l + 1, l == 0, l == c.numLayers() - 1);
            ModelProto graph = DecoderGraph.fixedPart(c, weights, format, opset, seq, context, "calibration." + l, Map.of(), part,
                    Variant.STATIC, lora);
            Path file = onnxDir.resolve("calibration_layer" + l + ".onnx");
            writeModel(ActivationQdq.withOutputs(graph, ActivationQdq.activations(graph.getGraph())), file);
            parts.add(file);
        }
        return parts;
    }

    private static String precision(LinearFormat format, ActivationEncodings act) {
        int bits = format.weightBits();
        if (bits == 0) {
            return "float";
        }
        return act == null ? "w" + bits : act.settings().precision(bits);
    }

    /** A float32 tensor of the weights file. */
    private static float[] readFloats(Path onnxDir, WeightFile.Stored s) {
        var loc = s.location();
        try (var ch = FileChannel.open(onnxDir.resolve(loc.file()))) {
            ByteBuffer b = ByteBuffer.allocate(Math.toIntExact(loc.length())).order(ByteOrder.LITTLE_ENDIAN);
            while (b.hasRemaining()) {
                if (ch.read(b, loc.offset() + b.position()) < 0) {
                    throw new IOException("weights file ends before " + s.name());
                }
            }
            b.flip();
            float[] v = new float[b.remaining() / 4];
            b.asFloatBuffer().get(v);
            return v;
        } catch (IOException e) {
            throw new UncheckedIOException("reading " + s.name() + ": " + e.getMessage(), e);
        }
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
