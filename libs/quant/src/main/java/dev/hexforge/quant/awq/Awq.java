package dev.hexforge.quant.awq;

import dev.hexforge.checkpoint.ModelConfig;
import dev.hexforge.checkpoint.TensorNames.Linear;
import dev.hexforge.checkpoint.TensorNames;
import dev.hexforge.progress.Progress;
import dev.hexforge.quant.QuantSpec;
import dev.hexforge.quant.QuantizedLinear;
import dev.hexforge.quant.QuantizedModel;
import dev.hexforge.quant.calib.CalibrationSet;
import dev.hexforge.quant.calib.LayerForward;
import dev.hexforge.quant.calib.LayerParams;
import dev.hexforge.quant.calib.LayerSource;
import dev.hexforge.quant.calib.SequenceBatches;
import dev.hexforge.quant.resume.JournalJson;
import dev.hexforge.quant.resume.LayerJournal;
import dev.hexforge.quant.rtn.Rtn;

import java.util.ArrayList;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * AWQ (Lin et al.), as llm-awq / AutoAWQ do it, per decoder layer on the full-precision path:
 * <ol>
 *   <li>for each group (input_layernorm → q,k,v judged at the attention output; v → o when their shapes match;
 *       post_attention_layernorm → gate,up judged at the MLP output; up → down judged at down's output) search
 *       {@code s = mean|x|^ratio} over 20 ratios, normalised (mean over every calibration token), keeping the scale
 *       with the least output error of the group's module on up to {@value #SEARCH_TOKENS} tokens of whole
 *       sequences when its linears are quantized as {@code Q(W·s)/s};</li>
 *   <li>fold: the previous norm (or linear's rows) divided by s, the group's columns multiplied by s;</li>
 *   <li>clip search for every linear but q and k: per (row, group) shrink the range by 0..45% and keep the
 *       clip with least output error on up to 512 sampled tokens;</li>
 *   <li>quantize every linear (RTN), and continue with the unmodified layer's output.</li>
 * </ol>
 */
public final class Awq {
    static final int GRID = 20;
    static final int CLIP_GRID = 20;
    static final int CLIP_STEPS = 10;
    static final int CLIP_TOKENS = 512;
    /**
     * Tokens (whole calibration sequences) on which the scale search judges its candidates; the activation
     * statistics that propose them use every token.
     */
    static final int SEARCH_TOKENS = 4096;

    /**
     * A scaled group's module output error (mean squared, against full precision): {@code awq} is the objective the
     * scale search minimised (the group quantized as Q(W·s)/s), {@code rtn} the same module with plain RTN, and
     * {@code finalError} the module with the layer's final weights (after later folds and the clip search).
     */
    public record GroupError(int layer, String group, double awq, double rtn, double ratio, double finalError) {
    }

    public record Result(QuantizedModel model, List<GroupError> groups) {
    }

    private Awq() {
    }

    public static Result run(LayerSource base, CalibrationSet calib, QuantSpec spec, List<String> keep, Progress progress) {
        return run(base, calib, spec, keep, progress, new LinkedHashMap<>());
    }

    /** As the other, putting each quantized linear into {@code out} as it is finished (a StoredTensors keeps them off the heap). */
    public static Result run(LayerSource base, CalibrationSet calib, QuantSpec spec, List<String> keep, Progress progress,
                             Map<String, QuantizedLinear> out) {
        return run(base, calib, spec, keep, progress, out, LayerJournal.NONE);
    }

    /**
     * As the other, saving the hidden states, the errors and the rewritten floats after every layer in
     * {@code journal} and continuing after the last saved layer when it holds one ({@code out} must then hold the
     * tensors stored by that layer).
     */
    public static Result run(LayerSource base, CalibrationSet calib, QuantSpec spec, List<String> keep, Progress progress,
                             Map<String, QuantizedLinear> out, LayerJournal journal) {
        ModelConfig c = base.config();
        LayerForward lf = new LayerForward(c);
        // sequences of equal length run stacked: one product per batch, not per sequence
        List<SequenceBatches.Batch> batches = SequenceBatches.of(calib.sequences(), base);
        Map<String, float[]> replaced = new LinkedHashMap<>();
        List<GroupError> errors = new ArrayList<>();
        int first = 0;
        LayerJournal.State saved = journal.resume();
        if (saved != null) {
            SequenceBatches.restore(batches, saved.hidden());
            errors.addAll(JournalJson.read(saved.json(), GroupError[].class));
            replaced.putAll(saved.floats());
            first = saved.layersDone();
        }
        for (int l = first; l < c.numLayers(); l++) {
            LayerParams orig = base.layer(l);
            // the scales are searched and folded on a copy; the traces come from the layer as it was
            LayerParams p = orig.copy();
            List<LayerForward.Trace> traces = new ArrayList<>();
            for (SequenceBatches.Batch b : batches) {
                traces.add(lf.run(orig, b.x, b.length));
            }
            LayerScaling scaling = new LayerScaling(lf, p, traces, spec);
            scaling.scaleGroup("input_layernorm->q,k,v", List.of(Linear.Q, Linear.K, Linear.V), null);
            if (c.kvSize() == c.qSize()) {
                scaling.scaleGroup("v_proj->o_proj", List.of(Linear.O), Linear.V);
            }
            scaling.scaleGroup("post_attention_layernorm->gate,up", List.of(Linear.GATE, Linear.UP), null);
            scaling.scaleGroup("up_proj->down_proj", List.of(Linear.DOWN), Linear.UP);
            Map<Linear, float[]> dequantized = new EnumMap<>(Linear.class);
            for (Linear lin : Linear.values()) {
                String name = TensorNames.weight(l, lin);
                if (keep.stream().anyMatch(name::contains)) {
                    replaced.put(name, p.weights.get(lin));
                    dequantized.put(lin, p.weights.get(lin));
                    continue;
                }
                if (lin != Linear.Q && lin != Linear.K) {
                    scaling.clip(lin);
                }
                float[] w = p.weights.get(lin);
                QuantizedLinear q = Rtn.quantize(w, w.length / scaling.inputSize(lin), scaling.inputSize(lin), spec);
                out.put(name, q);
                dequantized.put(lin, q.dequantize());
            }
            errors.addAll(scaling.errors(l, dequantized));
            replaced.put(TensorNames.inputNorm(l), p.inputNorm);
            replaced.put(TensorNames.postAttentionNorm(l), p.postAttentionNorm);
            for (int b = 0; b < batches.size(); b++) {
                batches.get(b).x = traces.get(b).output();
            }
            journal.save(new LayerJournal.State(l + 1, out.size(), SequenceBatches.hidden(batches), JournalJson.write(errors), replaced));
            progress.update("awq layer " + (l + 1) + "/" + c.numLayers(), l + 1, c.numLayers());
        }
        return new Result(new QuantizedModel(c, spec, out, replaced), errors);
    }

    /** Pseudo-quantization: quantize and dequantize a row-major [out, in] weight. */
    static float[] fakeQuant(float[] w, int in, QuantSpec spec) {
        return Rtn.quantize(w, w.length / in, in, spec).dequantize();
    }

    /** Clamps to ±max per group, as the clip search does. */
    static float clampTo(float v, float max) {
        return Math.max(-max, Math.min(max, v));
    }

}
