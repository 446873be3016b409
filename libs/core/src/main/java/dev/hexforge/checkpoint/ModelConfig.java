package dev.hexforge.checkpoint;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The parts of a Hugging Face {@code config.json} that define the decoder's shapes and math.
 *
 * @param attentionBias q/k/v projections have a bias (always for Qwen2, {@code attention_bias} for Llama and Qwen3)
 * @param ropeScaling   the inverse frequencies' rescaling ({@link RopeScaling#NONE} for none)
 * @param qkNorm        every head of q and k goes through an RMSNorm over head_dim before RoPE (Qwen3)
 * @param eosTokenIds   one or more end-of-sequence ids
 */
public record ModelConfig(
        Architecture architecture,
        int hiddenSize,
        int intermediateSize,
        int numLayers,
        int numHeads,
        int numKvHeads,
        int headDim,
        int vocabSize,
        int maxPositionEmbeddings,
        double ropeTheta,
        RopeScaling ropeScaling,
        double rmsNormEps,
        boolean tieWordEmbeddings,
        boolean attentionBias,
        boolean qkNorm,
        int bosTokenId,
        List<Integer> eosTokenIds,
        String torchDtype) {

    private static final ObjectMapper JSON = new ObjectMapper();

    public ModelConfig {
        eosTokenIds = List.copyOf(eosTokenIds);
        ropeScaling = ropeScaling == null ? RopeScaling.NONE : ropeScaling;
        List<String> problems = new ArrayList<>();
        positive(problems, "hidden_size", hiddenSize);
        positive(problems, "intermediate_size", intermediateSize);
        positive(problems, "num_hidden_layers", numLayers);
        positive(problems, "num_attention_heads", numHeads);
        positive(problems, "num_key_value_heads", numKvHeads);
        positive(problems, "head_dim", headDim);
        positive(problems, "vocab_size", vocabSize);
        positive(problems, "max_position_embeddings", maxPositionEmbeddings);
        if (numHeads > 0 && numKvHeads > 0 && numHeads % numKvHeads != 0) {
            problems.add("num_attention_heads (" + numHeads + ") is not a multiple of num_key_value_heads (" + numKvHeads + ")");
        }
        if (headDim > 0 && headDim % 2 != 0) {
            problems.add("head_dim (" + headDim + ") must be even for rotary embeddings");
        }
        if (!(ropeTheta > 0)) {
            problems.add("rope_theta must be positive, got " + ropeTheta);
        }
        if (!(rmsNormEps > 0)) {
            problems.add("rms_norm_eps must be positive, got " + rmsNormEps);
        }
        if (!problems.isEmpty()) {
            throw new CheckpointException("config.json: " + String.join("; ", problems));
        }
    }

    /** The same architecture with only its first {@code n} decoder layers (benchmarks that sample a model's layers). */
    public ModelConfig withNumLayers(int n) {
        return new ModelConfig(architecture, hiddenSize, intermediateSize, n, numHeads, numKvHeads, headDim, vocabSize,
                maxPositionEmbeddings, ropeTheta, ropeScaling, rmsNormEps, tieWordEmbeddings, attentionBias, qkNorm,
                bosTokenId, eosTokenIds, torchDtype);
    }

    private static void positive(List<String> problems, String key, int v) {
        if (v <= 0) {
            problems.add(key + " must be a positive integer, got " + v);
        }
    }

    public int qSize() {
        return numHeads * headDim;
    }

    /** [out, in] of a decoder layer's linear. */
    public long[] linearShape(TensorNames.Linear l) {
        long h = hiddenSize();
        return switch (l) {
            case Q -> new long[]{qSize(), h};
            case K, V -> new long[]{kvSize(), h};
            case O -> new long[]{h, qSize()};
            case GATE, UP -> new long[]{intermediateSize(), h};
            case DOWN -> new long[]{h, intermediateSize()};
        };
    }

    public int kvSize() {
        return numKvHeads * headDim;
    }

    public int groupSize() {
        return numHeads / numKvHeads;
    }

    public static ModelConfig read(Path dir) {
        Path file = dir.resolve("config.json");
        JsonNode root;
        try {
            root = JSON.readTree(Files.readString(file));
        } catch (NoSuchFileException e) {
            throw new CheckpointException(dir + ": no config.json (not a Hugging Face model folder)");
        } catch (IOException e) {
            throw new CheckpointException("config.json is not valid JSON: " + e.getMessage(), e);
        }
        if (root == null || !root.isObject()) {
            throw new CheckpointException("config.json is not a JSON object");
        }
        return fromJson(root);
    }

    public static ModelConfig fromJson(JsonNode c) {
        if (!c.hasNonNull("model_type")) {
            throw new CheckpointException("config.json: missing \"model_type\" (expected one of qwen2, llama, qwen3)");
        }
        Architecture arch = Architecture.fromModelType(c.get("model_type").asText());
        List<String> missing = new ArrayList<>();
        for (String key : List.of("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads", "vocab_size")) {
            if (!c.hasNonNull(key)) {
                missing.add(key);
            }
        }
        if (!missing.isEmpty()) {
            throw new CheckpointException("config.json: missing required keys " + missing);
        }
        // transformers 5 writes one rope_parameters object (rope_type, rope_theta, the scaling's numbers) where earlier
        // versions wrote rope_theta and rope_scaling: either is read, the older keys first
        JsonNode ropeParameters = c.get("rope_parameters");
        RopeScaling ropeScaling = RopeScaling.fromJson(c.hasNonNull("rope_scaling") || ropeParameters == null
                ? c.get("rope_scaling") : ropeParameters);
        double ropeTheta = c.hasNonNull("rope_theta") ? c.get("rope_theta").asDouble()
                : ropeParameters != null ? ropeParameters.path("rope_theta").asDouble(10000.0) : 10000.0;
        if (c.hasNonNull("hidden_act") && !c.get("hidden_act").asText().equals("silu")) {
            throw new CheckpointException("config.json: hidden_act '" + c.get("hidden_act").asText()
                    + "' is not supported (only silu)");
        }
        if (c.path("mlp_bias").asBoolean(false)) {
            throw new CheckpointException("config.json: mlp_bias true is not supported");
        }
        int hidden = c.get("hidden_size").asInt();
        int heads = c.get("num_attention_heads").asInt();
        int kvHeads = c.path("num_key_value_heads").asInt(heads);
        int headDim = c.hasNonNull("head_dim") ? c.get("head_dim").asInt() : arch.defaultHeadDim(hidden, heads);
        boolean attentionBias = arch.alwaysAttentionBias() || c.path("attention_bias").asBoolean(false);
        for (JsonNode layerType : c.path("layer_types")) {
            if (!layerType.asText().equals("full_attention")) {
                throw new CheckpointException("config.json: layer_types has '" + layerType.asText() + "' layers; only "
                        + "full_attention is supported (every layer attends to the whole context here)");
            }
        }
        if (c.path("use_sliding_window").asBoolean(false)) {
            throw new CheckpointException("config.json: use_sliding_window true is not supported (every layer attends to the "
                    + "whole context here); convert a checkpoint with use_sliding_window false");
        }
        List<Integer> eos = new ArrayList<>();
        JsonNode eosNode = c.get("eos_token_id");
        if (eosNode != null && eosNode.isArray()) {
            eosNode.forEach(n -> eos.add(n.asInt()));
        } else if (eosNode != null && eosNode.isNumber()) {
            eos.add(eosNode.asInt());
        }
        return new ModelConfig(arch, hidden, c.get("intermediate_size").asInt(), c.get("num_hidden_layers").asInt(),
                heads, kvHeads, headDim, c.get("vocab_size").asInt(),
                c.path("max_position_embeddings").asInt(arch.defaultMaxPositions()),
                ropeTheta, ropeScaling, c.path("rms_norm_eps").asDouble(1e-6),
                c.path("tie_word_embeddings").asBoolean(false),
                attentionBias, arch.hasQkNorm(), c.path("bos_token_id").asInt(-1), eos,
                c.path("torch_dtype").asText(c.path("dtype").asText("float32")));
    }
}
