package dev.hexforge.quant.calib;

import dev.hexforge.checkpoint.Checkpoint;
import dev.hexforge.checkpoint.ModelConfig;
import dev.hexforge.checkpoint.TensorNames;
import dev.hexforge.checkpoint.TensorNames.Linear;
import dev.hexforge.forward.DecoderWeights;
import dev.hexforge.safetensors.FloatConversion;
import dev.hexforge.safetensors.TensorInfo;

import java.nio.ByteBuffer;
import java.util.function.Function;
import java.util.function.IntFunction;

/**
 * Where a calibrated quantizer reads the float model, one decoder layer at a time: each {@link #layer} is a fresh
 * working copy, and the embedding is read by the rows a sequence uses. Read from a checkpoint ({@link #of(Checkpoint)}),
 * the heap holds one layer however large the model; {@link #of(DecoderWeights)} serves a model already in memory.
 * Both give the same floats.
 */
public interface LayerSource {
    ModelConfig config();

    /** A working copy of layer {@code l}'s weights, norms and biases. */
    LayerParams layer(int l);

    /** The token embeddings of a sequence, [ids.length, hidden]. */
    float[] embed(int[] ids);

    /** This source cut to its first {@code n} layers (benchmarks that sample a model's layers). */
    default LayerSource firstLayers(int n) {
        if (n < 1 || n > config().numLayers()) {
            throw new IllegalArgumentException("layers must be in [1, " + config().numLayers() + "], got " + n);
        }
        return of(config().withNumLayers(n), this::layer, this::embed);
    }

    static LayerSource of(ModelConfig config, IntFunction<LayerParams> layers, Function<int[], float[]> embed) {
        return new LayerSource() {
            @Override
            public ModelConfig config() {
                return config;
            }

            @Override
            public LayerParams layer(int l) {
                return layers.apply(l);
            }

            @Override
            public float[] embed(int[] ids) {
                return embed.apply(ids);
            }
        };
    }

    static LayerSource of(DecoderWeights w) {
        float[] table = w.embed();
        return of(w.config(), l -> LayerParams.copyOf(w.layer(l)), ids -> LayerForward.embed(table, w.config().hiddenSize(), ids));
    }

    static LayerSource of(Checkpoint ckpt) {
        return of(ckpt.config(), l -> read(ckpt, l), ids -> embedRows(ckpt, ids));
    }

    private static LayerParams read(Checkpoint ckpt, int l) {
        ModelConfig c = ckpt.config();
        LayerParams p = new LayerParams();
        p.inputNorm = ckpt.floats(TensorNames.inputNorm(l));
        p.postAttentionNorm = ckpt.floats(TensorNames.postAttentionNorm(l));
        if (c.qkNorm()) {
            p.qNorm = ckpt.floats(TensorNames.qNorm(l));
            p.kNorm = ckpt.floats(TensorNames.kNorm(l));
        }
        for (Linear lin : Linear.values()) {
            p.weights.put(lin, ckpt.floats(TensorNames.weight(l, lin)));
        }
        if (c.attentionBias()) {
            for (Linear lin : new Linear[]{Linear.Q, Linear.K, Linear.V}) {
                p.biases.put(lin, ckpt.floats(TensorNames.bias(l, lin)));
            }
        }
        return p;
    }

    /** The embedding's rows for {@code ids}, widened from the mapped checkpoint. */
    private static float[] embedRows(Checkpoint ckpt, int[] ids) {
        int h = ckpt.config().hiddenSize();
        TensorInfo t = ckpt.store().info(TensorNames.EMBED);
        ByteBuffer table = ckpt.store().bytes(TensorNames.EMBED);
        int rowBytes = h * t.dtype().bytes();
        float[] out = new float[ids.length * h];
        for (int i = 0; i < ids.length; i++) {
            ByteBuffer row = table.slice(ids[i] * rowBytes, rowBytes);
            System.arraycopy(FloatConversion.toFloats(row, t.dtype(), h, TensorNames.EMBED), 0, out, i * h, h);
        }
        return out;
    }
}
