package dev.hexforge.quant.awq;

import dev.hexforge.checkpoint.ModelConfig;
import dev.hexforge.checkpoint.TensorNames.Linear;
import dev.hexforge.kernels.Kernels;
import dev.hexforge.quant.QuantSpec;
import dev.hexforge.quant.calib.LayerForward;
import dev.hexforge.quant.calib.LayerParams;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** AWQ's per-layer work: scale search and folding for each group, then the clip search. */
final class LayerScaling {
    private final LayerForward lf;
    private final ModelConfig c;
    private final LayerParams p;
    private final List<LayerForward.Trace> traces;
    /** The scale search judges candidates on the first traces, up to {@link Awq#SEARCH_TOKENS} tokens (at least one). */
    private final int searchTraces;
    private final QuantSpec spec;
    /** Current inputs of each linear (divided by the folded scales), per sequence. */
    private final List<float[]> n1 = new ArrayList<>();
    private final List<float[]> ctx = new ArrayList<>();
    private final List<float[]> n2 = new ArrayList<>();
    private final List<float[]> act = new ArrayList<>();

    LayerScaling(LayerForward lf, LayerParams p, List<LayerForward.Trace> traces, QuantSpec spec) {
        this.lf = lf;
        this.c = lf.config();
        this.p = p;
        this.traces = traces;
        this.spec = spec;
        int n = 0;
        long rows = 0;
        while (n < traces.size() && (n == 0 || rows + traces.get(n).output().length / c.hiddenSize() <= Awq.SEARCH_TOKENS)) {
            rows += traces.get(n).output().length / c.hiddenSize();
            n++;
        }
        this.searchTraces = n;
        for (LayerForward.Trace t : traces) {
            n1.add(t.normed1().clone());
            ctx.add(t.attnContext().clone());
            n2.add(t.normed2().clone());
            act.add(t.mlpHidden().clone());
        }
    }

    int inputSize(Linear l) {
        return switch (l) {
            case Q, K, V, GATE, UP -> c.hiddenSize();
            case O -> c.qSize();
            case DOWN -> c.intermediateSize();
        };
    }

    private List<float[]> inputs(Linear l) {
        return switch (l) {
            case Q, K, V -> n1;
            case O -> ctx;
            case GATE, UP -> n2;
            case DOWN -> act;
        };
    }

    /**
     * The output of the module a group is judged at, for trace s (one or several stacked sequences of the trace's
     * length), with the given weights for the group's linears.
     */
    private float[] moduleOutput(int s, List<Linear> group, List<float[]> weights) {
        int len = traces.get(s).length();
        int h = c.hiddenSize();
        Linear first = group.get(0);
        float[] x = inputs(first).get(s);
        int rows = x.length / inputSize(first);
        if (first == Linear.Q) {
            float[] q = lf.linear(x, rows, weights.get(0), p.biases.get(Linear.Q), c.qSize(), h);
            float[] k = lf.linear(x, rows, weights.get(1), p.biases.get(Linear.K), c.kvSize(), h);
            float[] v = lf.linear(x, rows, weights.get(2), p.biases.get(Linear.V), c.kvSize(), h);
            return lf.linear(lf.attend(p, q, k, v, rows, len), rows, p.weights.get(Linear.O), null, h, c.qSize());
        }
        if (first == Linear.GATE) {
            int inter = c.intermediateSize();
            float[] a = lf.swiglu(lf.linear(x, rows, weights.get(0), null, inter, h), lf.linear(x, rows, weights.get(1), null, inter, h));
            return lf.linear(a, rows, p.weights.get(Linear.DOWN), null, h, inter);
        }
        int in = inputSize(first);
        return lf.linear(x, rows, weights.get(0), null, weights.get(0).length / in, in);
    }

    private double loss(List<Linear> group, List<float[]> weights, List<float[]> reference) {
        double sum = 0;
        long n = 0;
        for (int s = 0; s < searchTraces; s++) {
            float[] o = moduleOutput(s, group, weights);
            float[] r = reference.get(s);
            for (int i = 0; i < o.length; i++) {
                double d = o[i] - r[i];
                sum += d * d;
            }
            n += o.length;
        }
        return sum / n;
    }

    private record Searched(String name, List<Linear> group, List<float[]> reference, double rtnLoss, double searchLoss,
                            double ratio) {
    }

    private final List<Searched> searched = new ArrayList<>();

    /** Each group's search objective, its RTN counterpart, and its error with the layer's final weights. */
    List<Awq.GroupError> errors(int layer, Map<Linear, float[]> dequantized) {
        List<Awq.GroupError> out = new ArrayList<>();
        for (Searched g : searched) {
            List<float[]> w = new ArrayList<>();
            for (Linear l : g.group()) {
                w.add(dequantized.get(l));
            }
            out.add(new Awq.GroupError(layer, g.name(), g.searchLoss(), g.rtnLoss(), g.ratio(), loss(g.group(), w, g.reference())));
        }
        return out;
    }

    /** Searches the group's scale and folds it. */
    void scaleGroup(String name, List<Linear> group, Linear previousLinear) {
        int in = inputSize(group.get(0));
        List<float[]> xs = inputs(group.get(0));
        double[] mean = new double[in];
        long rows = 0;
        for (float[] x : xs) {
            int len = x.length / in;
            for (int r = 0; r < len; r++) {
                for (int j = 0; j < in; j++) {
                    mean[j] += Math.abs(x[r * in + j]);
                }
            }
            rows += len;
        }
        for (int j = 0; j < in; j++) {
            mean[j] /= rows;
        }
        List<float[]> fp = new ArrayList<>();
        for (Linear l : group) {
            fp.add(p.weights.get(l));
        }
        List<float[]> reference = new ArrayList<>();
        for (int s = 0; s < searchTraces; s++) {
            reference.add(moduleOutput(s, group, fp));
        }
        List<float[]> rtnWeights = new ArrayList<>();
        for (float[] w : fp) {
            rtnWeights.add(Awq.fakeQuant(w, in, spec));
        }
        double rtnLoss = loss(group, rtnWeights, reference);
        double best = Double.POSITIVE_INFINITY;
        float[] bestScale = null;
        double bestRatio = 0;
        for (int g = 0; g < Awq.GRID; g++) {
            double ratio = (double) g / Awq.GRID;
            float[] s = scales(mean, ratio);
            List<float[]> candidate = new ArrayList<>();
            for (float[] w : fp) {
                candidate.add(scaledFakeQuant(w, s, in));
            }
            double l = loss(group, candidate, reference);
            if (l < best) {
                best = l;
                bestScale = s;
                bestRatio = ratio;
            }
        }
        fold(group, previousLinear, bestScale, in);
        searched.add(new Searched(name, group, reference, rtnLoss, best, bestRatio));
    }

    private static float[] scales(double[] mean, double ratio) {
        float[] s = new float[mean.length];
        float max = 0;
        float min = Float.POSITIVE_INFINITY;
        for (int j = 0; j < s.length; j++) {
            s[j] = Math.max((float) Math.pow(mean[j], ratio), 1e-4f);
            max = Math.max(max, s[j]);
            min = Math.min(min, s[j]);
        }
        float norm = (float) Math.sqrt((double) max * min);
        for (int j = 0; j < s.length; j++) {
            s[j] /= norm;
        }
        return s;
    }

    /** Q(W · diag(s)) · diag(1/s). */
    private float[] scaledFakeQuant(float[] w, float[] s, int in) {
        float[] scaled = new float[w.length];
        for (int i = 0; i < w.length; i++) {
            scaled[i] = w[i] * s[i % in];
        }
        float[] q = Awq.fakeQuant(scaled, in, spec);
        for (int i = 0; i < q.length; i++) {
            q[i] /= s[i % in];
        }
        return q;
    }

    private void fold(List<Linear> group, Linear previousLinear, float[] s, int in) {
        if (previousLinear == null) {
            float[] norm = group.get(0) == Linear.Q ? p.inputNorm : p.postAttentionNorm;
            for (int j = 0; j < in; j++) {
                norm[j] /= s[j];
            }
        } else {
            float[] w = p.weights.get(previousLinear);
            int prevIn = w.length / in;
            for (int r = 0; r < in; r++) {
                for (int j = 0; j < prevIn; j++) {
                    w[r * prevIn + j] /= s[r];
                }
            }
            float[] b = p.biases.get(previousLinear);
            if (b != null) {
                for (int r = 0; r < in; r++) {
                    b[r] /= s[r];
                }
            }
        }
        for (Linear l : group) {
            float[] w = p.weights.get(l);
            for (int i = 0; i < w.length; i++) {
                w[i] *= s[i % in];
            }
        }
        for (float[] x : inputs(group.get(0))) {
            for (int i = 0; i < x.length; i++) {
                x[i] /= s[i % in];
            }
        }
    }

    /** Per (row, group) range shrink with the least output error on sampled tokens; clamps the weight in place. */
    void clip(Linear l) {
        int in = inputSize(l);
        float[] w = p.weights.get(l);
        int out = w.length / in;
        List<float[]> xs = inputs(l);
        int total = xs.stream().mapToInt(x -> x.length / in).sum();
        int step = Math.max(1, total / Awq.CLIP_TOKENS);
        List<float[]> sample = new ArrayList<>();
        int idx = 0;
        for (float[] x : xs) {
            for (int r = 0; r < x.length / in; r++, idx++) {
                if (idx % step == 0) {
                    float[] row = new float[in];
                    System.arraycopy(x, r * in, row, 0, in);
                    sample.add(row);
                }
            }
        }
        int n = sample.size();
        int g = spec.effectiveGroup(in);
        int groups = spec.groups(in);
        QuantSpec oneGroup = new QuantSpec(spec.bits(), 0, spec.symmetric());
        int steps = Awq.CLIP_STEPS;
        for (int grp = 0; grp < groups; grp++) {
            int from = grp * g;
            int len = Math.min(in, from + g) - from;
            float[] xg = new float[n * len];
            for (int r = 0; r < n; r++) {
                System.arraycopy(sample.get(r), from, xg, r * len, len);
            }
            // every candidate's change of the group's weights, δ = W − Q(clip(W)), one row per (output, step)
            float[] amax = new float[out];
            float[] deltas = new float[out * steps * len];
            float[] clipped = new float[len];
            for (int o = 0; o < out; o++) {
                for (int j = 0; j < len; j++) {
                    amax[o] = Math.max(amax[o], Math.abs(w[o * in + from + j]));
                }
                for (int i = 0; i < steps; i++) {
                    float max = clipMax(amax[o], i);
                    for (int j = 0; j < len; j++) {
                        clipped[j] = Awq.clampTo(w[o * in + from + j], max);
                    }
                    float[] q = Awq.fakeQuant(clipped, len, oneGroup);
                    int row = (o * steps + i) * len;
                    for (int j = 0; j < len; j++) {
                        deltas[row + j] = w[o * in + from + j] - q[j];
                    }
                }
            }
            // the output change of each candidate on each sampled token: E = X_g · δᵀ [n, out·steps]
            float[] e = new float[n * out * steps];
            Kernels.sharedFloat32().matmulNT(xg, deltas, e, n, len, out * steps, false);
            double[] err = new double[out * steps];
            for (int r = 0; r < n; r++) {
                int base = r * out * steps;
                for (int c = 0; c < out * steps; c++) {
                    double d = e[base + c];
                    err[c] += d * d;
                }
            }
            for (int o = 0; o < out; o++) {
                int best = 0;
                for (int i = 1; i < steps; i++) {
                    if (err[o * steps + i] < err[o * steps + best]) {
                        best = i;
                    }
                }
                float max = clipMax(amax[o], best);
                for (int j = 0; j < len; j++) {
                    w[o * in + from + j] = Awq.clampTo(w[o * in + from + j], max);
                }
            }
        }
    }

    private static float clipMax(float amax, int step) {
        return amax * (1 - (float) step / Awq.CLIP_GRID);
    }
}
