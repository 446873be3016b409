package dev.hexforge.onnx.export;

import dev.hexforge.contracts.NpuLimits;
import dev.hexforge.onnx.qdq.ActivationEncodings;
import dev.hexforge.onnx.qdq.Encoding;

import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The graph interface of a {@link Variant#GENIE} export, as Qualcomm's Genie runtime feeds and reads it:
 * <ul>
 *   <li>part 1 of n is the embedding lookup ({@code input_ids} int32 [1, N] to {@code hidden_states.0}); the decoder
 *       layers follow in parts under the per-graph limit; the last part ends in the final norm, the LM head and
 *       {@code logits} [1, N, vocab];</li>
 *   <li>a part with layers takes {@code hidden_states.<first layer>}, {@code attention_mask} [1, 1, N, CL] (additive),
 *       {@code position_ids_cos} / {@code position_ids_sin} [1, 1, N, head_dim / 2] (the host computes RoPE, with any
 *       scaling, from the config's {@code positional-encoding}), {@code past_key_<l>_in} [kv_heads, 1, head_dim, CL - N]
 *       (keys transposed) and {@code past_value_<l>_in} [kv_heads, 1, CL - N, head_dim], and returns the new
 *       positions' {@code past_key_<l>_out} [kv_heads, 1, head_dim, N] and {@code past_value_<l>_out}
 *       [kv_heads, 1, N, head_dim];</li>
 *   <li>graphs are named {@code prompt_ar<N>_cl<CL>_<i>_of_<n>} and {@code token_ar1_cl<CL>_<i>_of_<n>}: Genie finds a
 *       part's two graphs in its context binary by these names.</li>
 * </ul>
 */
public final class GenieIo {
    public static final String COS = "position_ids_cos";
    public static final String SIN = "position_ids_sin";
    /** Prompt graph lengths (AR-N) a Genie bundle is built with (the job spec's rule). */
    public static final List<Integer> PROMPT_LENGTHS = NpuLimits.GENIE_PROMPT_LENGTHS;
    public static final int MIN_CONTEXT = NpuLimits.GENIE_MIN_CONTEXT;

    private GenieIo() {
    }

    public static String keyIn(int layer) {
        return "past_key_" + layer + "_in";
    }

    public static String valueIn(int layer) {
        return "past_value_" + layer + "_in";
    }

    public static String keyOut(int layer) {
        return "past_key_" + layer + "_out";
    }

    public static String valueOut(int layer) {
        return "past_value_" + layer + "_out";
    }

    /** The name Genie knows a graph by: {@code part} counts from 0 here and from 1 in the name. */
    public static String graphName(boolean prompt, int promptLength, int contextLength, int part, int parts) {
        return (prompt ? "prompt_ar" + promptLength : "token_ar1") + "_cl" + contextLength + "_" + (part + 1) + "_of_" + parts;
    }

    /**
     * The calibrated encodings of a model's static graphs extended to the Genie interface's own tensors: the cache
     * inputs and outputs take the encoding of the layer's {@code present.<l>.key / value} (the same values, transposed
     * for keys), and cos / sin the exact 16-bit encoding of [-1, 1], as the RoPE tables have in the static graphs.
     */
    public static ActivationEncodings encodings(ActivationEncodings calibrated, int layers) {
        return new ActivationEncodings(calibrated.settings(), calibrated.rangeMethod(), calibrated.calibrationSequences(),
                calibrated.noisiest(), encodings(calibrated.tensors(), layers));
    }

    /** As {@link #encodings(ActivationEncodings, int)}, by tensor name. */
    public static Map<String, Encoding> encodings(Map<String, Encoding> calibrated, int layers) {
        Map<String, Encoding> all = new HashMap<>(calibrated);
        for (int l = 0; l < layers; l++) {
            Encoding k = calibrated.get("present." + l + ".key");
            Encoding v = calibrated.get("present." + l + ".value");
            if (k != null) {
                all.put(keyIn(l), k);
                all.put(keyOut(l), k);
            }
            if (v != null) {
                all.put(valueIn(l), v);
                all.put(valueOut(l), v);
            }
        }
        Encoding unit = Encoding.ofRange(-1, 1, 16);
        all.put(COS, unit);
        all.put(SIN, unit);
        return all;
    }
}
