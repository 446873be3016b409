package dev.hexforge.lora.train;

import dev.hexforge.checkpoint.TensorNames.Linear;

import java.util.EnumMap;
import java.util.List;
import java.util.Map;

/** What one layer's forward of a {@link TrainingStep} keeps for its backward. */
final class LayerCache<A> {
    A xIn;
    A rstd1;
    A n1;
    A q;
    A kk;
    A v;
    A qRaw; // q and k before Qwen3's per-head norms, with each head's inverse RMS; null without them
    A kRaw;
    A qRstd;
    A kRstd;
    List<A> probs; // per sequence and head, [n, n]
    A attn;
    A xMid;
    A rstd2;
    A n2;
    A gate;
    A up;
    final Map<Linear, Adapter<A>> adapters = new EnumMap<>(Linear.class);

    /** What one adapter keeps for its backward. */
    static final class Adapter<A> {
        A input;   // the dropped-out input (or the input itself without dropout)
        A keep;    // the dropout multipliers (0 or 1/(1-p)), null without dropout
        A scaledU; // scale · (input · Aᵀ), [T, r]
    }
}
