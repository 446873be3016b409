package dev.hexforge.quant.gate;

import dev.hexforge.checkpoint.Checkpoint;
import dev.hexforge.checkpoint.ModelConfig;
import dev.hexforge.checkpoint.TensorNames;
import dev.hexforge.eval.Perplexity;
import dev.hexforge.kernels.Kernels;
import dev.hexforge.quant.calib.LayerForward;
import dev.hexforge.quant.calib.LayerSource;
import dev.hexforge.safetensors.FloatConversion;
import dev.hexforge.safetensors.TensorInfo;

import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.function.IntConsumer;

/**
 * Scores windows of text on the float model layer by layer, read from the mapped checkpoint (the gate's float
 * baseline, and {@code hexforge eval ppl} on a Hugging Face folder): every window passes through layer 0, then
 * layer 1, and so on, and the LM head is applied a block of vocabulary rows at a time
 * with a running log-sum-exp and arg-max per position. The heap holds one layer's float32 weights, the windows'
 * hidden states and one block of the head, whatever the model's size (a float export through ONNX Runtime would
 * hold four bytes a parameter in native memory).
 */
public final class FloatScoring {
    /** Vocabulary rows of the head widened at a time. */
    private static final int HEAD_ROWS = 4096;
    /** Rows (tokens) of the windows taken through the layers together. */
    static final int GROUP_ROWS = 4096;

    private FloatScoring() {
    }

    static Perplexity.Scored score(Checkpoint ckpt, GateText text) {
        return score(ckpt, text.ids(), text.window(), null);
    }

    /**
     * The perplexity of {@code ids} in non-overlapping windows of {@code window} tokens (a fresh context each, the
     * first token of each unscored, trailing tokens dropped) and the top-1 token at every scored position, as
     * {@link Perplexity#score} computes them on a whole model. Windows are taken a group of up to
     * {@value #GROUP_ROWS} rows at a time, each group through every layer.
     *
     * @param onWindow called with the number of windows done, for progress; may be null
     */
    public static Perplexity.Scored score(Checkpoint ckpt, int[] ids, int window, IntConsumer onWindow) {
        ModelConfig c = ckpt.config();
        if (window < 2 || window > c.maxPositionEmbeddings()) {
            throw new IllegalArgumentException("window must be between 2 and the model's context " + c.maxPositionEmbeddings()
                    + " tokens, got " + window);
        }
        int windows = ids.length / window;
        if (windows == 0) {
            throw new IllegalArgumentException("the text has " + ids.length + " tokens, fewer than one window of " + window);
        }
        int perGroup = Math.max(1, GROUP_ROWS / window);
        int[] top1 = new int[windows * (window - 1)];
        double nll = 0;
        LayerSource source = LayerSource.of(ckpt);
        LayerForward lf = new LayerForward(c);
        for (int w0 = 0; w0 < windows; w0 += perGroup) {
            int n = Math.min(perGroup, windows - w0);
            nll += group(ckpt, source, lf, Arrays.copyOfRange(ids, w0 * window, (w0 + n) * window), window, n, top1,
                    w0 * (window - 1));
            if (onWindow != null) {
                onWindow.accept(w0 + n);
            }
        }
        int positions = top1.length;
        double mean = nll / positions;
        return new Perplexity.Scored(new Perplexity.Result(Math.exp(mean), mean, positions, windows,
                ids.length - windows * window), top1);
    }

    /** Summed NLL of {@code windows} windows stacked in {@code ids}; their top-1 tokens go to {@code top1} from {@code at}. */
    private static double group(Checkpoint ckpt, LayerSource source, LayerForward lf, int[] ids, int window, int windows,
                                int[] top1Out, int at) {
        ModelConfig c = ckpt.config();
        int h = c.hiddenSize();
        // the windows through layer 0, then layer 1, ...: the linears run over all their rows at once
        float[] hidden = source.embed(ids);
        for (int l = 0; l < c.numLayers(); l++) {
            hidden = lf.run(source.layer(l), hidden, window).output();
        }
        // positions 0..window-2 of every window predict the next token
        int positions = windows * (window - 1);
        float[] x = new float[positions * h];
        float[] normed = lf.rmsNorm(hidden, windows * window, ckpt.floats(TensorNames.FINAL_NORM));
        for (int w = 0; w < windows; w++) {
            System.arraycopy(normed, w * window * h, x, w * (window - 1) * h, (window - 1) * h);
        }
        int[] targets = new int[positions];
        for (int w = 0; w < windows; w++) {
            System.arraycopy(ids, w * window + 1, targets, w * (window - 1), window - 1);
        }
        double[] max = new double[positions];
        double[] sum = new double[positions];
        float[] target = new float[positions];
        float[] best = new float[positions];
        int[] top1 = new int[positions];
        Arrays.fill(max, Double.NEGATIVE_INFINITY);
        Arrays.fill(best, Float.NEGATIVE_INFINITY);

        String head = c.tieWordEmbeddings() ? TensorNames.EMBED : TensorNames.LM_HEAD;
        TensorInfo t = ckpt.store().info(head);
        ByteBuffer table = ckpt.store().bytes(head);
        int rowBytes = h * t.dtype().bytes();
        Kernels<float[]> k = Kernels.sharedFloat32();
        for (int v0 = 0; v0 < c.vocabSize(); v0 += HEAD_ROWS) {
            int rows = Math.min(HEAD_ROWS, c.vocabSize() - v0);
            float[] wBlock = FloatConversion.toFloats(table.slice(v0 * rowBytes, rows * rowBytes), t.dtype(), rows * h, head);
            float[] logits = new float[positions * rows];
            k.matmulNT(x, wBlock, logits, positions, h, rows, false);
            for (int p = 0; p < positions; p++) {
                int base = p * rows;
                double m = max[p];
                for (int r = 0; r < rows; r++) {
                    float v = logits[base + r];
                    if (v > best[p]) {
                        best[p] = v;
                        top1[p] = v0 + r;
                    }
                    m = Math.max(m, v);
                }
                double s = sum[p] * Math.exp(max[p] - m);
                for (int r = 0; r < rows; r++) {
                    s += Math.exp(logits[base + r] - m);
                }
                max[p] = m;
                sum[p] = s;
                int tgt = targets[p] - v0;
                if (tgt >= 0 && tgt < rows) {
                    target[p] = logits[base + tgt];
                }
            }
        }
        double nll = 0;
        for (int p = 0; p < positions; p++) {
            nll += -(target[p] - max[p] - Math.log(sum[p]));
        }
        System.arraycopy(top1, 0, top1Out, at, positions);
        return nll;
    }
}
