package dev.hexforge.lora.train;

import dev.hexforge.kernels.Kernels;
import java.util.List;

/**
 * AdamW as PyTorch computes it (β 0.9 / 0.999, ε 1e-8, decoupled weight decay {@code p -= lr·wd·p} before the
 * Adam update), over the LoRA parameters; moments are kept in float32 beside each tensor.
 */
public final class AdamW<A> {
    public static final double BETA1 = 0.9;
    public static final double BETA2 = 0.999;
    public static final double EPS = 1e-8;

    private final Kernels<A> k;
    private final List<LoraParams.Module<A>> modules;
    private final double weightDecay;
    private final float[][] m;
    private final float[][] v;
    private int steps;

    public AdamW(Kernels<A> k, LoraParams<A> params, double weightDecay) {
        this.k = k;
        this.modules = params.modules();
        this.weightDecay = weightDecay;
        this.m = new float[modules.size() * 2][];
        this.v = new float[modules.size() * 2][];
        for (int i = 0; i < modules.size(); i++) {
            LoraParams.Module<A> mod = modules.get(i);
            m[2 * i] = new float[k.length(mod.a)];
            v[2 * i] = new float[k.length(mod.a)];
            m[2 * i + 1] = new float[k.length(mod.b)];
            v[2 * i + 1] = new float[k.length(mod.b)];
        }
    }

    /** The global L2 norm of all gradients. */
    public double gradientNorm() {
        double ss = 0;
        for (LoraParams.Module<A> mod : modules) {
            ss += k.dot(mod.gradA, 0, mod.gradA, 0, k.length(mod.gradA));
            ss += k.dot(mod.gradB, 0, mod.gradB, 0, k.length(mod.gradB));
        }
        return Math.sqrt(ss);
    }

    /** One update with the gradients multiplied by {@code gradScale} (clipping). */
    public void step(double lr, double gradScale) {
        steps++;
        double c1 = 1 - Math.pow(BETA1, steps);
        double c2 = 1 - Math.pow(BETA2, steps);
        for (int i = 0; i < modules.size(); i++) {
            LoraParams.Module<A> mod = modules.get(i);
            update(mod.a, mod.gradA, m[2 * i], v[2 * i], lr, gradScale, c1, c2);
            update(mod.b, mod.gradB, m[2 * i + 1], v[2 * i + 1], lr, gradScale, c1, c2);
        }
    }

    private void update(A p, A g, float[] m1, float[] m2, double lr, double gradScale, double c1, double c2) {
        double stepSize = lr / c1;
        double sqrtC2 = Math.sqrt(c2);
        for (int j = 0; j < m1.length; j++) {
            double grad = k.get(g, j) * gradScale;
            double value = k.get(p, j);
            if (weightDecay > 0) {
                value *= 1 - lr * weightDecay;
            }
            double a = BETA1 * m1[j] + (1 - BETA1) * grad;
            double b = BETA2 * m2[j] + (1 - BETA2) * grad * grad;
            m1[j] = (float) a;
            m2[j] = (float) b;
            k.set(p, j, value - stepSize * a / (Math.sqrt(b) / sqrtC2 + EPS));
        }
    }

    public int steps() {
        return steps;
    }

    /** Moments in module order: A's first and second, then B's, per module. */
    public float[][] firstMoments() {
        return m;
    }

    public float[][] secondMoments() {
        return v;
    }

    public void restore(int steps, float[][] first, float[][] second) {
        if (first.length != m.length || second.length != v.length) {
            throw new IllegalArgumentException("optimizer state has " + first.length + " tensors, expected " + m.length);
        }
        for (int i = 0; i < m.length; i++) {
            if (first[i].length != m[i].length || second[i].length != v[i].length) {
                throw new IllegalArgumentException("optimizer tensor " + i + " has the wrong size");
            }
            System.arraycopy(first[i], 0, m[i], 0, m[i].length);
            System.arraycopy(second[i], 0, v[i], 0, v[i].length);
        }
        this.steps = steps;
    }
}
