package dev.hexforge.quant.gptq;

import dev.hexforge.checkpoint.ModelConfig;
import dev.hexforge.checkpoint.TensorNames;
import dev.hexforge.checkpoint.TensorNames.Linear;
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
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * GPTQ over a whole decoder: layers in order; inside a layer the subsets [k, v, q], [o], [up, gate], [down] in
 * turn, each seeing inputs produced by the already-quantized subsets before it; the quantized layer's output feeds
 * the next layer. Records, per linear, the calibration output error of GPTQ and of RTN at the same spec.
 */
public final class GptqRunner {
    private static final List<List<Linear>> SUBSETS = List.of(
            List.of(Linear.K, Linear.V, Linear.Q), List.of(Linear.O), List.of(Linear.UP, Linear.GATE), List.of(Linear.DOWN));

    /** Output error on the calibration inputs (Σ δ H δᵀ) of GPTQ and of plain RTN for one linear. */
    public record LayerError(String name, double gptq, double rtn) {
        public double reduction() {
            return rtn == 0 ? 0 : 1 - gptq / rtn;
        }
    }

    public record Result(QuantizedModel model, List<LayerError> errors) {
    }

    private GptqRunner() {
    }

    public static Result run(LayerSource base, CalibrationSet calib, QuantSpec spec, Gptq.Options opt, List<String> keep,
                             Progress progress) {
        return run(base, calib, spec, opt, keep, progress, new LinkedHashMap<>());
    }

    /** As the other, putting each quantized linear into {@code out} as it is finished (a StoredTensors keeps them off the heap). */
    public static Result run(LayerSource base, CalibrationSet calib, QuantSpec spec, Gptq.Options opt, List<String> keep,
                             Progress progress, Map<String, QuantizedLinear> out) {
        return run(base, calib, spec, opt, keep, progress, out, LayerJournal.NONE);
    }

    /**
     * As the other, saving the hidden states and the errors after every layer in {@code journal} and continuing
     * after the last saved layer when it holds one ({@code out} must then hold the tensors stored by that layer).
     */
    public static Result run(LayerSource base, CalibrationSet calib, QuantSpec spec, Gptq.Options opt, List<String> keep,
                             Progress progress, Map<String, QuantizedLinear> out, LayerJournal journal) {
        ModelConfig c = base.config();
        LayerForward lf = new LayerForward(c);
        List<SequenceBatches.Batch> batches = SequenceBatches.of(calib.sequences(), base);
        List<LayerError> errors = new ArrayList<>();
        int first = 0;
        LayerJournal.State saved = journal.resume();
        if (saved != null) {
            SequenceBatches.restore(batches, saved.hidden());
            errors.addAll(JournalJson.read(saved.json(), LayerError[].class));
            first = saved.layersDone();
        }
        for (int l = first; l < c.numLayers(); l++) {
            LayerParams p = base.layer(l);
            List<LayerForward.Steps> steps = new ArrayList<>();
            for (SequenceBatches.Batch b : batches) {
                steps.add(lf.new Steps(p, b.x, b.length));
            }
            for (List<Linear> subset : SUBSETS) {
                int layer = l;
                List<Linear> quantized = subset.stream()
                        .filter(lin -> keep.stream().noneMatch(TensorNames.weight(layer, lin)::contains)).toList();
                if (quantized.isEmpty()) {
                    continue;
                }
                Hessian hs = null;
                int k = 0;
                for (int bi = 0; bi < batches.size(); bi++) {
                    SequenceBatches.Batch b = batches.get(bi);
                    float[] in = steps.get(bi).inputOf(subset.get(0));
                    if (hs == null) {
                        k = in.length / b.rows();
                        hs = new Hessian(k);
                    }
                    hs.add(in, b.rows());
                }
                double[] h = hs.matrix();
                hs = null; // its accumulators are as large as the Hessian
                // the same inputs, so the same inverse for the subset's linears; made before the reports' float copy
                // and with the double Hessian dropped after it, so at most three k × k doubles are live at once
                Gptq.Prepared prepared = Gptq.prepare(h, k, opt);
                float[] hf = new float[h.length];
                for (int i = 0; i < h.length; i++) {
                    hf[i] = (float) h[i];
                }
                h = null;
                for (Linear lin : quantized) {
                    String name = TensorNames.weight(l, lin);
                    float[] w = p.weights.get(lin);
                    int rows = w.length / k;
                    QuantizedLinear q = Gptq.quantize(w, rows, k, prepared, spec, opt);
                    float[] deq = q.dequantize();
                    float[] rtn = Rtn.quantize(w, rows, k, spec).dequantize();
                    errors.add(new LayerError(name, Hessian.outputError(w, deq, rows, k, hf),
                            Hessian.outputError(w, rtn, rows, k, hf)));
                    p.weights.put(lin, deq);
                    out.put(name, q);
                }
            }
            for (int bi = 0; bi < batches.size(); bi++) {
                batches.get(bi).x = steps.get(bi).output();
                steps.set(bi, null);
            }
            journal.save(new LayerJournal.State(l + 1, out.size(), SequenceBatches.hidden(batches), JournalJson.write(errors), Map.of()));
            progress.update("gptq layer " + (l + 1) + "/" + c.numLayers(), l + 1, c.numLayers());
        }
        return new Result(new QuantizedModel(c, spec, out), errors);
    }
}
