package dev.hexforge.forward;

import dev.hexforge.checkpoint.Checkpoint;
import dev.hexforge.checkpoint.ModelConfig;
import dev.hexforge.checkpoint.TensorNames;
import dev.hexforge.checkpoint.TensorNames.Linear;
import dev.hexforge.kernels.FrozenMatrix;

import java.util.EnumMap;
import java.util.Map;
import java.util.function.BiFunction;
import java.util.function.Function;

/**
 * All decoder weights, row-major, linears as [out, in] like Hugging Face. The linears, the embedding and the LM head
 * are {@link FrozenMatrix}es: a bf16 checkpoint's tensors mapped from the file ({@link #load}) or read from it as
 * they are used ({@link #read}), float32 arrays otherwise; their values are the float32 ones every way. Norms and biases are float32.
 */
public final class DecoderWeights {

    /** The weights [head_dim] of the RMSNorms applied to every query head and every key head (Qwen3). */
    public record HeadNorms(float[] q, float[] k) {
        static HeadNorms load(Checkpoint ckpt, int layer) {
            return ckpt.config().qkNorm()
                    ? new HeadNorms(ckpt.floats(TensorNames.qNorm(layer)), ckpt.floats(TensorNames.kNorm(layer))) : null;
        }
    }

    /**
     * A low-rank update applied beside a frozen linear (LoRA, unmerged): {@code y += scale · B (A x)},
     * A [rank, in], B [out, rank].
     */
    public record LowRankDelta(float[] a, float[] b, int rank, float scale) {
    }

    /** One decoder layer. Biases are null when the architecture has none, the q/k norms when it has none. */
    public static final class Layer {
        final float[] inputNorm;
        final float[] postAttentionNorm;
        final HeadNorms headNorms;
        final Map<Linear, FrozenMatrix> weights;
        final Map<Linear, float[]> biases;
        final Map<Linear, LowRankDelta> adapters;

        Layer(float[] inputNorm, float[] postAttentionNorm, HeadNorms headNorms, Map<Linear, FrozenMatrix> weights,
              Map<Linear, float[]> biases, Map<Linear, LowRankDelta> adapters) {
            this.inputNorm = inputNorm;
            this.postAttentionNorm = postAttentionNorm;
            this.headNorms = headNorms;
            this.weights = weights;
            this.biases = biases;
            this.adapters = adapters;
        }

        /** Qwen3's per-head q and k norms, or null. */
        public HeadNorms headNorms() {
            return headNorms;
        }

        /** The low-rank adapter on this linear, or null. */
        public LowRankDelta adapter(Linear l) {
            return adapters.get(l);
        }

        public float[] inputNorm() {
            return inputNorm;
        }

        public float[] postAttentionNorm() {
            return postAttentionNorm;
        }

        /** The linear's weight as float32: shared when held so, a widened copy when held as bf16. */
        public float[] weight(Linear l) {
            return weights.get(l).toFloats();
        }

        /** The linear's weight as held. */
        public FrozenMatrix matrix(Linear l) {
            return weights.get(l);
        }

        public float[] bias(Linear l) {
            return biases.get(l);
        }
    }

    private final ModelConfig config;
    private final FrozenMatrix embed;
    private final Layer[] layers;
    private final float[] finalNorm;
    private final FrozenMatrix lmHead;

    private DecoderWeights(ModelConfig config, FrozenMatrix embed, Layer[] layers, float[] finalNorm, FrozenMatrix lmHead) {
        this.config = config;
        this.embed = embed;
        this.layers = layers;
        this.finalNorm = finalNorm;
        this.lmHead = lmHead;
    }

    /** The weights with a bf16 checkpoint's matrices mapped ({@link Checkpoint#matrix}): usable after it is closed. */
    public static DecoderWeights load(Checkpoint ckpt) {
        return load(ckpt, ckpt::matrix);
    }

    /**
     * The weights with a bf16 checkpoint's matrices read from its files on every use ({@link Checkpoint#readMatrix}):
     * resident memory holds none of them, whatever the model's size; usable while the checkpoint is open.
     */
    public static DecoderWeights read(Checkpoint ckpt) {
        return load(ckpt, ckpt::readMatrix);
    }

    /** bf16 matrices up to this many bytes are mapped by {@link #frozen}, larger ones read as used. */
    static final long MAPPED_LIMIT = 4L << 30;

    /**
     * The weights as a pass that reads them again and again (training) holds them: a bf16 checkpoint's matrices
     * mapped while they take at most {@link #MAPPED_LIMIT} (the 1.5B shape's 3.1 GB; read in place, a 0.5B training
     * step is 7% faster than through a read buffer), read from the files as used above it (a mapping's touched pages
     * count in the process's resident memory: an 8B model's 16 GB after one step, next to its activations). Usable
     * while the checkpoint is open.
     */
    public static DecoderWeights frozen(Checkpoint ckpt) {
        long bytes = 0;
        for (long[] shape : ckpt.tensors().values()) {
            if (shape.length == 2) {
                bytes += 2 * shape[0] * shape[1];
            }
        }
        return ckpt.mapsBf16() && bytes <= MAPPED_LIMIT ? load(ckpt) : read(ckpt);
    }

    private static DecoderWeights load(Checkpoint ckpt, Function<String, FrozenMatrix> matrix) {
        ModelConfig c = ckpt.config();
        Layer[] layers = new Layer[c.numLayers()];
        for (int i = 0; i < layers.length; i++) {
            Map<Linear, FrozenMatrix> w = new EnumMap<>(Linear.class);
            Map<Linear, float[]> b = new EnumMap<>(Linear.class);
            for (Linear l : Linear.values()) {
                w.put(l, matrix.apply(TensorNames.weight(i, l)));
            }
            if (c.attentionBias()) {
                for (Linear l : new Linear[]{Linear.Q, Linear.K, Linear.V}) {
                    b.put(l, ckpt.floats(TensorNames.bias(i, l)));
                }
            }
            layers[i] = new Layer(ckpt.floats(TensorNames.inputNorm(i)), ckpt.floats(TensorNames.postAttentionNorm(i)),
                    HeadNorms.load(ckpt, i), w, b, new EnumMap<>(Linear.class));
        }
        FrozenMatrix embed = matrix.apply(TensorNames.EMBED);
        FrozenMatrix head = c.tieWordEmbeddings() ? embed : matrix.apply(TensorNames.LM_HEAD);
        return new DecoderWeights(c, embed, layers, ckpt.floats(TensorNames.FINAL_NORM), head);
    }

    /**
     * A copy in which every linear weight of the decoder layers is replaced by {@code f(layerIndex, linear)} when
     * that returns non-null (used for fake quantization and merged adapters); other arrays are shared.
     */
    public DecoderWeights withLinears(BiFunction<Integer, Linear, float[]> f) {
        Layer[] out = new Layer[layers.length];
        for (int i = 0; i < layers.length; i++) {
            Map<Linear, FrozenMatrix> w = new EnumMap<>(layers[i].weights);
            for (Linear l : Linear.values()) {
                float[] replacement = f.apply(i, l);
                if (replacement != null) {
                    w.put(l, replaced(w.get(l), replacement, "layer " + i + " " + l));
                }
            }
            out[i] = new Layer(layers[i].inputNorm, layers[i].postAttentionNorm, layers[i].headNorms, w, layers[i].biases,
                    layers[i].adapters);
        }
        return new DecoderWeights(config, embed, out, finalNorm, lmHead);
    }

    /**
     * A copy in which tensors named in {@code byName} (Hugging Face names of norms, linear weights, the embedding and
     * the LM head) are replaced; used when a pass rewrites float tensors (AWQ folds scales into norms, a quantized
     * embedding). A tied model's head follows its embedding.
     */
    public DecoderWeights withReplacements(Map<String, float[]> byName) {
        Layer[] out = new Layer[layers.length];
        for (int i = 0; i < layers.length; i++) {
            Layer L = layers[i];
            Map<Linear, FrozenMatrix> w = new EnumMap<>(L.weights);
            for (Linear l : Linear.values()) {
                float[] r = byName.get(TensorNames.weight(i, l));
                if (r != null) {
                    w.put(l, replaced(w.get(l), r, TensorNames.weight(i, l)));
                }
            }
            out[i] = new Layer(byName.getOrDefault(TensorNames.inputNorm(i), L.inputNorm),
                    byName.getOrDefault(TensorNames.postAttentionNorm(i), L.postAttentionNorm), L.headNorms, w, L.biases,
                    L.adapters);
        }
        float[] re = byName.get(TensorNames.EMBED);
        FrozenMatrix e = re == null ? embed : replaced(embed, re, TensorNames.EMBED);
        float[] rh = byName.get(TensorNames.LM_HEAD);
        FrozenMatrix head = config.tieWordEmbeddings() ? e : rh == null ? lmHead : replaced(lmHead, rh, TensorNames.LM_HEAD);
        return new DecoderWeights(config, e, out, byName.getOrDefault(TensorNames.FINAL_NORM, finalNorm), head);
    }

    private static FrozenMatrix replaced(FrozenMatrix old, float[] values, String what) {
        if (values.length != old.length()) {
            throw new IllegalArgumentException("replacement for " + what + " has " + values.length + " values, expected "
                    + old.length());
        }
        return FrozenMatrix.of(values, old.rows(), old.cols());
    }

    /** A copy with low-rank adapters attached where {@code f(layerIndex, linear)} returns one; weights are shared. */
    public DecoderWeights withAdapters(BiFunction<Integer, Linear, LowRankDelta> f) {
        Layer[] out = new Layer[layers.length];
        for (int i = 0; i < layers.length; i++) {
            Map<Linear, LowRankDelta> a = new EnumMap<>(layers[i].adapters);
            for (Linear l : Linear.values()) {
                LowRankDelta d = f.apply(i, l);
                if (d != null) {
                    a.put(l, d);
                }
            }
            out[i] = new Layer(layers[i].inputNorm, layers[i].postAttentionNorm, layers[i].headNorms, layers[i].weights,
                    layers[i].biases, a);
        }
        return new DecoderWeights(config, embed, out, finalNorm, lmHead);
    }

    public ModelConfig config() {
        return config;
    }

    /** The embedding as float32: shared when held so, a widened copy when held as bf16. */
    public float[] embed() {
        return embed.toFloats();
    }

    /** The embedding as held; a tied model's {@link #lmHeadMatrix} is this same object. */
    public FrozenMatrix embedMatrix() {
        return embed;
    }

    public Layer layer(int i) {
        return layers[i];
    }

    public float[] finalNorm() {
        return finalNorm;
    }

    /** The LM head as float32: shared when held so, a widened copy when held as bf16. */
    public float[] lmHead() {
        return lmHead.toFloats();
    }

    public FrozenMatrix lmHeadMatrix() {
        return lmHead;
    }
}
