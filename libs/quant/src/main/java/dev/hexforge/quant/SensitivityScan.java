package dev.hexforge.quant;

import dev.hexforge.checkpoint.ModelConfig;
import dev.hexforge.checkpoint.TensorNames;
import dev.hexforge.checkpoint.TensorNames.Linear;
import dev.hexforge.eval.Perplexity;
import dev.hexforge.forward.DecoderForward;
import dev.hexforge.forward.DecoderWeights;
import dev.hexforge.quant.calib.CalibrationSet;
import dev.hexforge.quant.rtn.Rtn;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * Automatic mixed precision: quantize one linear at a time (the rest in float), measure how much the calibration
 * loss rises, and keep the most sensitive linears in float (FP16 on the NPU) while the extra bytes stay within a
 * budget relative to the fully quantized linears.
 */
public final class SensitivityScan {

    /** One linear's loss rise when it alone is quantized, and its size quantized and in FP16. */
    public record Sensitivity(String name, double lossIncrease, long quantizedBytes, long fp16Bytes) {
    }

    /** The scan, most sensitive first, and the linears chosen to stay in float. */
    public record Result(List<Sensitivity> ranking, List<String> keep, long budgetBytes, long extraBytes) {
    }

    private SensitivityScan() {
    }

    public static Result run(DecoderWeights base, CalibrationSet calib, QuantSpec spec, double maxExtraBytesPercent) {
        ModelConfig c = base.config();
        double baseline = loss(new DecoderForward(base), calib);
        List<Sensitivity> ranking = new ArrayList<>();
        long totalQuantized = 0;
        for (int l = 0; l < c.numLayers(); l++) {
            for (Linear lin : Linear.values()) {
                float[] w = base.layer(l).weight(lin);
                int in = inputs(c, lin);
                int out = w.length / in;
                float[] q = Rtn.quantize(w, out, in, spec).dequantize();
                int layer = l;
                DecoderWeights one = base.withLinears((i, x) -> i == layer && x == lin ? q : null);
                long qBytes = (long) out * in * spec.bits() / 8 + (long) out * spec.groups(in) * (spec.symmetric() ? 4 : 5);
                totalQuantized += qBytes;
                ranking.add(new Sensitivity(TensorNames.weight(l, lin), loss(new DecoderForward(one), calib) - baseline,
                        qBytes, 2L * out * in));
            }
        }
        ranking.sort(Comparator.comparingDouble(Sensitivity::lossIncrease).reversed());
        long budget = (long) (totalQuantized * maxExtraBytesPercent / 100);
        long extra = 0;
        List<String> keep = new ArrayList<>();
        for (Sensitivity s : ranking) {
            long cost = s.fp16Bytes() - s.quantizedBytes();
            if (s.lossIncrease() <= 0 || extra + cost > budget) {
                continue;
            }
            extra += cost;
            keep.add(s.name().substring(0, s.name().length() - ".weight".length()));
        }
        return new Result(ranking, keep, budget, extra);
    }

    static int inputs(ModelConfig c, Linear l) {
        return switch (l) {
            case Q, K, V, GATE, UP -> c.hiddenSize();
            case O -> c.qSize();
            case DOWN -> c.intermediateSize();
        };
    }

    /** Mean next-token NLL over the calibration sequences. */
    static double loss(DecoderForward model, CalibrationSet calib) {
        double nll = 0;
        long n = 0;
        for (int[] seq : calib.sequences()) {
            float[][] logits = model.logits(seq);
            for (int t = 0; t + 1 < seq.length; t++) {
                nll += Perplexity.negativeLogLikelihood(logits[t], seq[t + 1]);
                n++;
            }
        }
        return nll / n;
    }
}
