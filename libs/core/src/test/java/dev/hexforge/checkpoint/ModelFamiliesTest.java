package dev.hexforge.checkpoint;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.hexforge.forward.DecoderForward;
import dev.hexforge.forward.DecoderWeights;
import dev.hexforge.forward.Rope;
import dev.hexforge.progress.Progress;
import dev.hexforge.safetensors.DType;
import dev.hexforge.synth.Preset;
import dev.hexforge.synth.SyntheticCheckpoint;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Llama 3.x (llama3 RoPE scaling) and Qwen3 (explicit head_dim, per-head q/k norms) as their configs say. */
class ModelFamiliesTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    @TempDir
    Path tmp;

    /** Llama-3.2-1B's config.json, as published. */
    static ObjectNode llama32() {
        ObjectNode c = JSON.createObjectNode();
        c.putArray("architectures").add("LlamaForCausalLM");
        c.put("attention_bias", false).put("bos_token_id", 128000).put("eos_token_id", 128001).put("head_dim", 64)
                .put("hidden_act", "silu").put("hidden_size", 2048).put("intermediate_size", 8192)
                .put("max_position_embeddings", 131072).put("mlp_bias", false).put("model_type", "llama")
                .put("num_attention_heads", 32).put("num_hidden_layers", 16).put("num_key_value_heads", 8)
                .put("rms_norm_eps", 1e-5).put("rope_theta", 500000.0).put("tie_word_embeddings", true)
                .put("torch_dtype", "bfloat16").put("vocab_size", 128256);
        c.putObject("rope_scaling").put("factor", 32.0).put("high_freq_factor", 4.0).put("low_freq_factor", 1.0)
                .put("original_max_position_embeddings", 8192).put("rope_type", "llama3");
        return c;
    }

    /** Qwen3-0.6B's config.json, as published. */
    static ObjectNode qwen3() {
        ObjectNode c = JSON.createObjectNode();
        c.putArray("architectures").add("Qwen3ForCausalLM");
        c.put("attention_bias", false).put("bos_token_id", 151643).put("eos_token_id", 151645).put("head_dim", 128)
                .put("hidden_act", "silu").put("hidden_size", 1024).put("intermediate_size", 3072)
                .put("max_position_embeddings", 40960).put("max_window_layers", 28).put("model_type", "qwen3")
                .put("num_attention_heads", 16).put("num_hidden_layers", 28).put("num_key_value_heads", 8)
                .put("rms_norm_eps", 1e-6).putNull("rope_scaling");
        c.put("rope_theta", 1000000).putNull("sliding_window");
        c.put("tie_word_embeddings", true).put("torch_dtype", "bfloat16").put("use_sliding_window", false)
                .put("vocab_size", 151936);
        return c;
    }

    @Test
    void llama32ConfigIsReadWithItsScaling() {
        ModelConfig c = ModelConfig.fromJson(llama32());
        assertEquals(Architecture.LLAMA, c.architecture());
        assertEquals(RopeScaling.llama3(32, 1, 4, 8192), c.ropeScaling());
        assertFalse(c.attentionBias());
        assertFalse(c.qkNorm());
        assertTrue(c.tieWordEmbeddings());
        assertEquals(64, c.headDim());
    }

    @Test
    void qwen3ConfigHasHeadNormsAndItsOwnHeadDim() {
        ModelConfig c = ModelConfig.fromJson(qwen3());
        assertEquals(Architecture.QWEN3, c.architecture());
        assertTrue(c.qkNorm());
        assertFalse(c.attentionBias());
        assertEquals(128, c.headDim());
        assertEquals(2048, c.qSize(), "16 heads × 128, not the hidden size");
        assertEquals(RopeScaling.NONE, c.ropeScaling());
        assertTrue(Checkpoint.expectedTensors(c).containsKey("model.layers.27.self_attn.q_norm.weight"));
        assertEquals(128, Checkpoint.expectedTensors(c).get("model.layers.0.self_attn.k_norm.weight")[0]);
    }

    /** transformers 5's config.json: rope_parameters in place of rope_theta and rope_scaling, dtype for torch_dtype. */
    @Test
    void theTransformers5LayoutMeansTheSame() {
        ObjectNode v5 = llama32();
        v5.remove("rope_theta");
        ObjectNode params = (ObjectNode) v5.remove("rope_scaling");
        params.put("rope_theta", 500000.0);
        v5.set("rope_parameters", params);
        v5.put("dtype", (String) null);
        v5.put("dtype", v5.remove("torch_dtype").asText());
        assertEquals(ModelConfig.fromJson(llama32()), ModelConfig.fromJson(v5));
        ObjectNode q = qwen3();
        q.remove("rope_theta");
        q.remove("rope_scaling");
        q.putObject("rope_parameters").put("rope_type", "default").put("rope_theta", 1000000.0);
        assertEquals(ModelConfig.fromJson(qwen3()), ModelConfig.fromJson(q));
        ObjectNode yarn = qwen3();
        yarn.remove("rope_scaling");
        yarn.putObject("rope_parameters").put("rope_type", "yarn").put("factor", 4.0).put("rope_theta", 1000000.0);
        assertTrue(assertThrows(CheckpointException.class, () -> ModelConfig.fromJson(yarn)).getMessage().contains("'yarn'"));
    }

    @ParameterizedTest
    @ValueSource(strings = {"linear", "dynamic", "yarn", "longrope", "ntk-by-parts"})
    void otherRopeTypesAreRefusedByName(String type) {
        ObjectNode c = llama32();
        c.putObject("rope_scaling").put("rope_type", type).put("factor", 4.0);
        CheckpointException e = assertThrows(CheckpointException.class, () -> ModelConfig.fromJson(c));
        assertTrue(e.getMessage().contains("rope_scaling") && e.getMessage().contains("'" + type + "'")
                && e.getMessage().contains("llama3"), e.getMessage());
    }

    @Test
    void aLlama3ScalingWithoutItsNumbersOrWithNonsenseIsRefused() {
        ObjectNode c = llama32();
        ((ObjectNode) c.get("rope_scaling")).remove("low_freq_factor");
        assertTrue(assertThrows(CheckpointException.class, () -> ModelConfig.fromJson(c)).getMessage().contains("low_freq_factor"));
        ObjectNode d = llama32();
        ((ObjectNode) d.get("rope_scaling")).put("high_freq_factor", 0.5);
        assertTrue(assertThrows(CheckpointException.class, () -> ModelConfig.fromJson(d)).getMessage().contains("high_freq_factor"));
    }

    @Test
    void slidingWindowAttentionAndOtherArchitecturesAreRefused() {
        ObjectNode c = qwen3();
        c.put("use_sliding_window", true);
        assertTrue(assertThrows(CheckpointException.class, () -> ModelConfig.fromJson(c)).getMessage().contains("use_sliding_window"));
        ObjectNode mixed = qwen3();
        mixed.putArray("layer_types").add("full_attention").add("sliding_attention");
        assertTrue(assertThrows(CheckpointException.class, () -> ModelConfig.fromJson(mixed)).getMessage().contains("sliding_attention"));
        ObjectNode noHeadDim = qwen3();
        noHeadDim.remove("head_dim");
        assertEquals(128, ModelConfig.fromJson(noHeadDim).headDim(), "Qwen3's config class default, not hidden / heads = 64");
        ObjectNode d = qwen3();
        d.put("model_type", "qwen3_moe");
        String m = assertThrows(CheckpointException.class, () -> ModelConfig.fromJson(d)).getMessage();
        assertTrue(m.contains("qwen3_moe") && m.contains("qwen3") && m.contains("llama"), m);
    }

    /**
     * Llama 3's rule evaluated independently, in double precision from the published description: every frequency
     * of Llama-3.2-1B's table within float32 rounding of it, the three bands present, and the result different from
     * the unscaled table exactly where the rule says.
     */
    @Test
    void llama3FrequenciesFollowTheRule() {
        ModelConfig c = ModelConfig.fromJson(llama32());
        Rope scaled = Rope.of(c, 2);
        ObjectNode plain = llama32();
        plain.remove("rope_scaling");
        Rope unscaled = Rope.of(ModelConfig.fromJson(plain), 2);
        int d = 64;
        int kept = 0;
        int divided = 0;
        int blended = 0;
        for (int i = 0; i < d / 2; i++) {
            double f = Math.pow(500000.0, -2.0 * i / d);
            double wavelength = 2 * Math.PI / f;
            double expected;
            if (wavelength < 8192 / 4.0) {
                expected = f;
                kept++;
            } else if (wavelength > 8192 / 1.0) {
                expected = f / 32;
                divided++;
            } else {
                double s = (8192 / wavelength - 1) / (4 - 1);
                expected = (1 - s) * f / 32 + s * f;
                blended++;
            }
            // position 1: the angle is the frequency itself; cos/sin tables hold cos(f), sin(f)
            double got = Math.atan2(scaled.sin()[d + i], scaled.cos()[d + i]);
            assertEquals(expected, got, 2e-6 * Math.max(1e-3, expected), "frequency " + i);
            if (wavelength < 8192 / 4.0) {
                assertEquals(unscaled.sin()[d + i], scaled.sin()[d + i], 0f, "a high frequency is kept: " + i);
            } else {
                assertNotEquals(unscaled.sin()[d + i], scaled.sin()[d + i], "a low frequency changes: " + i);
            }
        }
        assertTrue(kept > 0 && divided > 0 && blended > 0, kept + " kept, " + divided + " divided, " + blended + " blended");
    }

    /** Synthetic checkpoints of the new presets carry the real models' configs and open as their families. */
    @Test
    void presetsWriteTheRealConfigs() {
        for (Preset p : List.of(Preset.LLAMA_3_2_1B, Preset.LLAMA_3_2_3B, Preset.QWEN3_0_6B, Preset.QWEN3_1_7B, Preset.QWEN3_4B)) {
            ModelConfig c = SyntheticCheckpoint.config(SyntheticCheckpoint.Options.of(p, DType.BF16, 0));
            assertEquals(p.architecture(), c.architecture(), p.id());
        }
        ModelConfig llama = SyntheticCheckpoint.config(SyntheticCheckpoint.Options.of(Preset.LLAMA_3_2_1B, DType.BF16, 0));
        assertEquals(ModelConfig.fromJson(llama32()), llama);
        ModelConfig q3 = SyntheticCheckpoint.config(SyntheticCheckpoint.Options.of(Preset.QWEN3_0_6B, DType.BF16, 0));
        assertEquals(ModelConfig.fromJson(qwen3()), q3);
    }

    /** Qwen3's per-head norms are in the forward: one value of one layer's q_norm weight moves the logits. */
    @Test
    void qwen3ForwardUsesTheHeadNorms() {
        Path dir = tmp.resolve("q3");
        SyntheticCheckpoint.write(SyntheticCheckpoint.Options.of(Preset.TINY_QWEN3, DType.F32, 3), dir, Progress.NONE);
        try (Checkpoint ckpt = Checkpoint.open(dir)) {
            DecoderWeights w = DecoderWeights.load(ckpt);
            assertEquals(4 * 48, ckpt.config().qSize());
            int[] ids = {5, 17, 300, 1999, 42};
            float[] a = new DecoderForward(w).logits(ids)[4];
            float[] qn = w.layer(1).headNorms().q();
            qn[3] *= 2;
            float[] b = new DecoderForward(w).logits(ids)[4];
            double diff = 0;
            for (int i = 0; i < a.length; i++) {
                diff = Math.max(diff, Math.abs(a[i] - b[i]));
            }
            assertTrue(diff > 1e-4, "the q norm's weight moved the logits by " + diff);
        }
    }
}
