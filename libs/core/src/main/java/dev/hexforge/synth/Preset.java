package dev.hexforge.synth;

import java.util.Arrays;
import java.util.Locale;
import java.util.stream.Collectors;

/** Shapes of real models (from their config.json), for synthetic checkpoints with random weights. */
public enum Preset {
    TINY("tiny", 128, 384, 4, 4, 2, 2048, 512, 1_000_000, true, "qwen2-tiny", 2045, 2045),
    QWEN2_5_0_5B("qwen2.5-0.5b", 896, 4864, 24, 14, 2, 151936, 32768, 1_000_000, true, "qwen2.5", 151643, 151643),
    QWEN2_5_1_5B("qwen2.5-1.5b", 1536, 8960, 28, 12, 2, 151936, 32768, 1_000_000, true, "qwen2.5", 151643, 151643),
    QWEN2_5_3B("qwen2.5-3b", 2048, 11008, 36, 16, 2, 151936, 32768, 1_000_000, true, "qwen2.5", 151643, 151643);

    final String id;
    final int hidden;
    final int intermediate;
    final int layers;
    final int heads;
    final int kvHeads;
    final int vocab;
    final int maxPositions;
    final double ropeTheta;
    final boolean tied;
    final String tokenizer;
    final int bos;
    final int eos;

    Preset(String id, int hidden, int intermediate, int layers, int heads, int kvHeads, int vocab, int maxPositions,
           double ropeTheta, boolean tied, String tokenizer, int bos, int eos) {
        this.id = id;
        this.hidden = hidden;
        this.intermediate = intermediate;
        this.layers = layers;
        this.heads = heads;
        this.kvHeads = kvHeads;
        this.vocab = vocab;
        this.maxPositions = maxPositions;
        this.ropeTheta = ropeTheta;
        this.tied = tied;
        this.tokenizer = tokenizer;
        this.bos = bos;
        this.eos = eos;
    }

    public String id() {
        return id;
    }

    public static Preset parse(String id) {
        for (Preset p : values()) {
            if (p.id.equals(id.toLowerCase(Locale.ROOT))) {
                return p;
            }
        }
        throw new IllegalArgumentException("unknown preset '" + id + "'; choose one of "
                + Arrays.stream(values()).map(Preset::id).collect(Collectors.joining(", ")));
    }
}
