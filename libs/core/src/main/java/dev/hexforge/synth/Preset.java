package dev.hexforge.synth;

import dev.hexforge.checkpoint.Architecture;
import dev.hexforge.checkpoint.RopeScaling;

import java.util.Arrays;
import java.util.Locale;
import java.util.stream.Collectors;

/**
 * Shapes of real models (from their config.json), for synthetic checkpoints with random weights. The {@code tiny-*}
 * presets are small models of each family for tests: Llama 3's real RoPE scaling, and a Qwen3 whose heads × head_dim
 * (4 × 48) differs from its hidden size (128), as Qwen3-0.6B's 16 × 128 against 1024. The models up to 4B share their
 * embedding with the head, as the real ones do; the 7-8B ones have a head of their own.
 */
public enum Preset {
    TINY("tiny", Architecture.QWEN2, 128, 384, 4, 4, 2, 0, 2048, 512, 1_000_000, null, 1e-6, true, "qwen2-tiny", 2045, 2045),
    TINY_LLAMA3("tiny-llama3", Architecture.LLAMA, 128, 384, 4, 4, 2, 0, 2048, 512, 500_000, llama3(), 1e-5, true, "qwen2-tiny",
            2045, 2045),
    TINY_QWEN3("tiny-qwen3", Architecture.QWEN3, 128, 384, 4, 4, 2, 48, 2048, 512, 1_000_000, null, 1e-6, true, "qwen2-tiny",
            2045, 2045),
    QWEN2_5_0_5B("qwen2.5-0.5b", Architecture.QWEN2, 896, 4864, 24, 14, 2, 0, 151936, 32768, 1_000_000, null, 1e-6, true,
            "qwen2.5", 151643, 151643),
    QWEN2_5_1_5B("qwen2.5-1.5b", Architecture.QWEN2, 1536, 8960, 28, 12, 2, 0, 151936, 32768, 1_000_000, null, 1e-6, true,
            "qwen2.5", 151643, 151643),
    QWEN2_5_3B("qwen2.5-3b", Architecture.QWEN2, 2048, 11008, 36, 16, 2, 0, 151936, 32768, 1_000_000, null, 1e-6, true,
            "qwen2.5", 151643, 151643),
    LLAMA_3_2_1B("llama-3.2-1b", Architecture.LLAMA, 2048, 8192, 16, 32, 8, 64, 128256, 131072, 500_000, llama3(), 1e-5, true,
            "llama3", 128000, 128001),
    LLAMA_3_2_3B("llama-3.2-3b", Architecture.LLAMA, 3072, 8192, 28, 24, 8, 128, 128256, 131072, 500_000, llama3(), 1e-5, true,
            "llama3", 128000, 128001),
    QWEN3_0_6B("qwen3-0.6b", Architecture.QWEN3, 1024, 3072, 28, 16, 8, 128, 151936, 40960, 1_000_000, null, 1e-6, true,
            "qwen2.5", 151643, 151645),
    QWEN3_1_7B("qwen3-1.7b", Architecture.QWEN3, 2048, 6144, 28, 16, 8, 128, 151936, 40960, 1_000_000, null, 1e-6, true,
            "qwen2.5", 151643, 151645),
    QWEN3_4B("qwen3-4b", Architecture.QWEN3, 2560, 9728, 36, 32, 8, 128, 151936, 40960, 1_000_000, null, 1e-6, true,
            "qwen2.5", 151643, 151645),
    /** Qwen2.5-7B-Instruct: untied head, 4 KV heads, a vocabulary padded to 152064 rows. */
    QWEN2_5_7B("qwen2.5-7b", Architecture.QWEN2, 3584, 18944, 28, 28, 4, 0, 152064, 32768, 1_000_000, null, 1e-6, false,
            "qwen2.5", 151643, 151645),
    /** Llama 3.1 8B: untied head; RoPE scaled by 8 from an original context of 8192. */
    LLAMA_3_1_8B("llama-3.1-8b", Architecture.LLAMA, 4096, 14336, 32, 32, 8, 0, 128256, 131072, 500_000,
            RopeScaling.llama3(8.0, 1.0, 4.0, 8192), 1e-5, false, "llama3", 128000, 128001),
    /** Qwen3-8B: untied head, per-head q/k norms, head_dim 128. */
    QWEN3_8B("qwen3-8b", Architecture.QWEN3, 4096, 12288, 36, 32, 8, 128, 151936, 40960, 1_000_000, null, 1e-6, false,
            "qwen2.5", 151643, 151645);

    final String id;
    final Architecture architecture;
    final int hidden;
    final int intermediate;
    final int layers;
    final int heads;
    final int kvHeads;
    /** 0: hidden / heads, and no {@code head_dim} key in the config. */
    final int headDim;
    final int vocab;
    final int maxPositions;
    final double ropeTheta;
    final RopeScaling ropeScaling;
    final double rmsNormEps;
    final boolean tied;
    final String tokenizer;
    final int bos;
    final int eos;

    Preset(String id, Architecture architecture, int hidden, int intermediate, int layers, int heads, int kvHeads,
           int headDim, int vocab, int maxPositions, double ropeTheta, RopeScaling ropeScaling, double rmsNormEps,
           boolean tied, String tokenizer, int bos, int eos) {
        this.id = id;
        this.architecture = architecture;
        this.hidden = hidden;
        this.intermediate = intermediate;
        this.layers = layers;
        this.heads = heads;
        this.kvHeads = kvHeads;
        this.headDim = headDim;
        this.vocab = vocab;
        this.maxPositions = maxPositions;
        this.ropeTheta = ropeTheta;
        this.ropeScaling = ropeScaling == null ? RopeScaling.NONE : ropeScaling;
        this.rmsNormEps = rmsNormEps;
        this.tied = tied;
        this.tokenizer = tokenizer;
        this.bos = bos;
        this.eos = eos;
    }

    /** Llama 3.2's rope_scaling. */
    private static RopeScaling llama3() {
        return RopeScaling.llama3(32.0, 1.0, 4.0, 8192);
    }

    public String id() {
        return id;
    }

    /** The family of the model the preset copies. */
    public Architecture architecture() {
        return architecture;
    }

    public static Preset parse(String id) {
        for (Preset p : values()) {
            if (p.id.equals(id.toLowerCase(Locale.ROOT))) {
                return p;
            }
        }
        throw new IllegalArgumentException("unknown preset '" + id + "'; choose one of " + ids());
    }

    /** Every preset's id, comma-separated. */
    public static String ids() {
        return Arrays.stream(values()).map(Preset::id).collect(Collectors.joining(", "));
    }
}
