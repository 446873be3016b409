package dev.hexforge.checkpoint;

/** Hugging Face tensor names of a Qwen2 / Llama / Qwen3 decoder. */
public final class TensorNames {
    public static final String EMBED = "model.embed_tokens.weight";
    public static final String FINAL_NORM = "model.norm.weight";
    public static final String LM_HEAD = "lm_head.weight";

    /** The seven linear projections of a decoder layer, in HF module names. */
    public enum Linear {
        Q("self_attn.q_proj"), K("self_attn.k_proj"), V("self_attn.v_proj"), O("self_attn.o_proj"),
        GATE("mlp.gate_proj"), UP("mlp.up_proj"), DOWN("mlp.down_proj");

        private final String module;

        Linear(String module) {
            this.module = module;
        }

        public String module() {
            return module;
        }

        /** The short name users write in target lists, e.g. {@code q_proj}. */
        public String shortName() {
            return module.substring(module.indexOf('.') + 1);
        }
    }

    private TensorNames() {
    }

    public static String layer(int i) {
        return "model.layers." + i + ".";
    }

    public static String weight(int layer, Linear linear) {
        return layer(layer) + linear.module() + ".weight";
    }

    public static String bias(int layer, Linear linear) {
        return layer(layer) + linear.module() + ".bias";
    }

    public static String inputNorm(int layer) {
        return layer(layer) + "input_layernorm.weight";
    }

    /** Qwen3's RMSNorm over head_dim applied to every query head, [head_dim]. */
    public static String qNorm(int layer) {
        return layer(layer) + "self_attn.q_norm.weight";
    }

    /** Qwen3's RMSNorm over head_dim applied to every key head, [head_dim]. */
    public static String kNorm(int layer) {
        return layer(layer) + "self_attn.k_norm.weight";
    }

    public static String postAttentionNorm(int layer) {
        return layer(layer) + "post_attention_layernorm.weight";
    }
}
