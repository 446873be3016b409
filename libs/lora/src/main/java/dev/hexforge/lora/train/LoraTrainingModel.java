package dev.hexforge.lora.train;

import dev.hexforge.checkpoint.ModelConfig;
import dev.hexforge.checkpoint.TensorNames.Linear;
import dev.hexforge.forward.DecoderWeights;
import dev.hexforge.forward.Rope;
import dev.hexforge.kernels.FrozenMatrix;
import dev.hexforge.kernels.Kernels;

import java.util.EnumMap;
import java.util.List;
import java.util.Map;

/**
 * Forward and hand-written backward of a Qwen2 / Llama / Qwen3 decoder with LoRA adapters, base weights (and
 * Qwen3's q/k norms) frozen. A batch is packed into one token stream ([tokens, hidden] for every linear) with
 * attention kept inside each sequence ({@link PackedAttention}), so no compute is spent on padding. The loss is the
 * summed negative log-likelihood of the target tokens; logits are computed only for the rows that predict a target,
 * in chunks, which bounds memory for large vocabularies.
 *
 * <p>A batch runs as a {@link TrainingStep}; per layer its forward keeps what the backward needs ({@link
 * LayerCache}): the layer input, both norm outputs with their inverse RMS, q and k before Qwen3's per-head norms with
 * their inverse RMS, post-RoPE q and k, v, the attention probabilities, the attention output, gate and up, and for
 * each adapter its (dropped-out) input and {@code scale · A x}.
 */
public final class LoraTrainingModel<A> {
    /** Logit values computed at once: bounds memory for large vocabularies (64 MB of float32, 110 rows of Qwen's). */
    static final int LOSS_CHUNK_VALUES = 1 << 24;

    final Kernels<A> k;
    final ModelConfig c;
    final LoraParams<A> params;
    final FrozenMatrix embed;
    final FrozenMatrix lmHead;
    final A lmHeadT; // [hidden, vocab] when within the budget, else null
    final A finalNorm;
    final FrozenLayer<A>[] layers;
    final Rope rope;
    final double dropout;

    static final class FrozenLayer<A> {
        A inputNorm;
        A postNorm;
        A qNorm; // Qwen3's per-head norms [head_dim], null without them
        A kNorm;
        final Map<Linear, FrozenMatrix> w = new EnumMap<>(Linear.class);
        final Map<Linear, A> b = new EnumMap<>(Linear.class);
        /** wᵀ [in, out], kept when the model is small enough (see {@link #TRANSPOSED_BUDGET}); else empty. */
        final Map<Linear, A> wt = new EnumMap<>(Linear.class);
    }

    /**
     * Frozen values (all linears and the head) up to which a float32 transposed copy is kept for the forward, which
     * then runs as broadcast FMAs with no horizontal sums: 256 MB. Past it, the forward reads the frozen weight
     * itself (dot products over rows of w), which at a 0.5B model's sizes is as fast and takes no memory.
     */
    private static final long TRANSPOSED_BUDGET = 1L << 26;

    public LoraTrainingModel(Kernels<A> k, DecoderWeights weights, LoraParams<A> params) {
        this(k, weights, params, TRANSPOSED_BUDGET);
    }

    /** With the budget for transposed copies given: 0 makes a small model take the path of large ones (tests). */
    @SuppressWarnings("unchecked")
    LoraTrainingModel(Kernels<A> k, DecoderWeights weights, LoraParams<A> params, long transposedBudget) {
        this.k = k;
        this.c = weights.config();
        this.params = params;
        this.embed = weights.embedMatrix();
        this.lmHead = weights.lmHeadMatrix();
        this.finalNorm = k.of(weights.finalNorm());
        this.layers = new FrozenLayer[c.numLayers()];
        long frozenValues = (long) c.vocabSize() * c.hiddenSize();
        for (int l = 0; l < layers.length; l++) {
            for (Linear lin : Linear.values()) {
                frozenValues += weights.layer(l).matrix(lin).length();
            }
        }
        boolean keepTransposed = frozenValues <= transposedBudget;
        this.lmHeadT = keepTransposed ? k.transpose(k.of(lmHead.toFloats()), c.vocabSize(), c.hiddenSize()) : null;
        for (int l = 0; l < layers.length; l++) {
            DecoderWeights.Layer src = weights.layer(l);
            FrozenLayer<A> f = new FrozenLayer<>();
            f.inputNorm = k.of(src.inputNorm());
            f.postNorm = k.of(src.postAttentionNorm());
            if (src.headNorms() != null) {
                f.qNorm = k.of(src.headNorms().q());
                f.kNorm = k.of(src.headNorms().k());
            }
            for (Linear lin : Linear.values()) {
                int[] shape = LoraParams.shape(c, lin);
                f.w.put(lin, src.matrix(lin));
                if (keepTransposed) {
                    f.wt.put(lin, k.transpose(k.of(src.weight(lin)), shape[0], shape[1]));
                }
                if (src.bias(lin) != null) {
                    f.b.put(lin, k.of(src.bias(lin)));
                }
            }
            layers[l] = f;
        }
        this.rope = Rope.of(c, c.maxPositionEmbeddings());
        this.dropout = params.config().dropout();
    }

    public ModelConfig config() {
        return c;
    }

    public LoraParams<A> params() {
        return params;
    }

    public Kernels<A> kernels() {
        return k;
    }

    /** The summed NLL and the number of target tokens of a batch. */
    public record Loss(double sum, int tokens) {
        public double mean() {
            return tokens == 0 ? 0 : sum / tokens;
        }
    }

    /** Loss without gradients or dropout (evaluation). */
    public Loss loss(List<TrainingExample> batch) {
        TrainingStep<A> p = new TrainingStep<>(this, batch, false, 0);
        p.forward();
        return p.loss(0, false);
    }

    /**
     * Forward and backward: adds {@code gradScale · ∂(summed NLL)/∂θ} to the parameter gradients. Dropout masks
     * come from {@code dropoutSeed}, so a step can be replayed exactly.
     */
    public Loss forwardBackward(List<TrainingExample> batch, double gradScale, long dropoutSeed) {
        TrainingStep<A> p = new TrainingStep<>(this, batch, true, dropoutSeed);
        p.forward();
        Loss loss = p.loss(gradScale, true);
        p.backward();
        return loss;
    }

    /** The training-mode loss (dropout from {@code dropoutSeed}) without gradients: for finite-difference checks. */
    public double forwardBackwardLossOnly(List<TrainingExample> batch, long dropoutSeed) {
        TrainingStep<A> p = new TrainingStep<>(this, batch, true, dropoutSeed);
        p.forward();
        return p.loss(0, false).sum();
    }
}
