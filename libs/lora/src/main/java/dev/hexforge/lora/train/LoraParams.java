package dev.hexforge.lora.train;

import dev.hexforge.kernels.Kernels;
import dev.hexforge.checkpoint.ModelConfig;
import dev.hexforge.checkpoint.TensorNames;
import dev.hexforge.checkpoint.TensorNames.Linear;
import dev.hexforge.forward.DecoderWeights.LowRankDelta;
import dev.hexforge.lora.LoraAdapter;
import dev.hexforge.lora.LoraConfig;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * The trainable state of a LoRA run: A [r, in] and B [out, r] for every targeted linear of every layer, with their
 * gradients. Initialised as PEFT does: A kaiming-uniform(a=√5), i.e. U(-1/√in, 1/√in), and B = 0.
 */
public final class LoraParams<A> {

    /** One adapted linear. */
    public static final class Module<A> {
        public final int layer;
        public final Linear linear;
        public final int in;
        public final int out;
        public final A a;
        public final A b;
        public final A gradA;
        public final A gradB;

        Module(int layer, Linear linear, int in, int out, A a, A b, A gradA, A gradB) {
            this.layer = layer;
            this.linear = linear;
            this.in = in;
            this.out = out;
            this.a = a;
            this.b = b;
            this.gradA = gradA;
            this.gradB = gradB;
        }
    }

    private final Kernels<A> k;
    private final LoraConfig config;
    private final List<Module<A>> modules;
    private final Map<String, Module<A>> byWeight = new LinkedHashMap<>();

    private LoraParams(Kernels<A> k, LoraConfig config, List<Module<A>> modules) {
        this.k = k;
        this.config = config;
        this.modules = List.copyOf(modules);
        for (Module<A> m : modules) {
            byWeight.put(TensorNames.weight(m.layer, m.linear), m);
        }
    }

    public static <A> LoraParams<A> init(Kernels<A> k, ModelConfig c, LoraConfig config, long seed) {
        List<Linear> targets = targets(config);
        SplittableRandom rng = new SplittableRandom(seed);
        List<Module<A>> modules = new ArrayList<>();
        for (int l = 0; l < c.numLayers(); l++) {
            for (Linear lin : targets) {
                int[] shape = shape(c, lin);
                int in = shape[1];
                int out = shape[0];
                A a = k.alloc(config.r() * in);
                double bound = 1.0 / Math.sqrt(in);
                for (int i = 0; i < config.r() * in; i++) {
                    k.set(a, i, (rng.nextDouble() * 2 - 1) * bound);
                }
                modules.add(new Module<>(l, lin, in, out, a, k.alloc(out * config.r()), k.alloc(config.r() * in),
                        k.alloc(out * config.r())));
            }
        }
        return new LoraParams<>(k, config, modules);
    }

    /** Starts from an existing adapter (to continue training it). */
    public static <A> LoraParams<A> from(Kernels<A> k, ModelConfig c, LoraAdapter adapter) {
        List<Module<A>> modules = new ArrayList<>();
        for (int l = 0; l < c.numLayers(); l++) {
            for (Linear lin : targets(adapter.config())) {
                LowRankDelta d = adapter.delta(l, lin);
                int[] shape = shape(c, lin);
                modules.add(new Module<>(l, lin, shape[1], shape[0], k.of(d.a().clone()), k.of(d.b().clone()),
                        k.alloc(d.a().length), k.alloc(d.b().length)));
            }
        }
        return new LoraParams<>(k, adapter.config(), modules);
    }

    static List<Linear> targets(LoraConfig config) {
        List<Linear> out = new ArrayList<>();
        List<String> known = new ArrayList<>();
        for (Linear l : Linear.values()) {
            known.add(l.shortName());
            if (config.targetModules().contains(l.shortName())) {
                out.add(l);
            }
        }
        for (String t : config.targetModules()) {
            if (!known.contains(t)) {
                throw new TrainingException("target module '" + t + "' does not exist in this decoder; choose from " + known);
            }
        }
        return out;
    }

    /** [out, in] of a linear. */
    static int[] shape(ModelConfig c, Linear l) {
        long[] s = c.linearShape(l);
        return new int[]{(int) s[0], (int) s[1]};
    }

    public LoraConfig config() {
        return config;
    }

    public List<Module<A>> modules() {
        return modules;
    }

    /** The module adapting this layer's linear, or null. */
    public Module<A> module(int layer, Linear linear) {
        return byWeight.get(TensorNames.weight(layer, linear));
    }

    public void zeroGradients() {
        for (Module<A> m : modules) {
            k.fill(m.gradA, 0);
            k.fill(m.gradB, 0);
        }
    }

    public long parameterCount() {
        long n = 0;
        for (Module<A> m : modules) {
            n += (long) k.length(m.a) + k.length(m.b);
        }
        return n;
    }

    /** The current values as a float32 PEFT adapter. */
    public LoraAdapter toAdapter() {
        Map<String, LowRankDelta> deltas = new LinkedHashMap<>();
        for (Module<A> m : modules) {
            deltas.put(TensorNames.weight(m.layer, m.linear),
                    new LowRankDelta(k.toFloats(m.a), k.toFloats(m.b), config.r(), config.scale()));
        }
        return new LoraAdapter(config, deltas);
    }

    /** Overwrites the values (resuming from a checkpoint). */
    public void load(LoraAdapter adapter) {
        for (Module<A> m : modules) {
            LowRankDelta d = adapter.delta(m.layer, m.linear);
            copyInto(d.a(), m.a);
            copyInto(d.b(), m.b);
        }
    }

    private void copyInto(float[] src, A dst) {
        for (int i = 0; i < src.length; i++) {
            k.set(dst, i, src[i]);
        }
    }
}
