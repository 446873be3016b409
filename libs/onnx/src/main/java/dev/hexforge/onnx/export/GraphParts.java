package dev.hexforge.onnx.export;

import dev.hexforge.checkpoint.ModelConfig;
import dev.hexforge.checkpoint.TensorNames;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * How a static export is cut by layers so that no graph's weights exceed the per-graph limit of the NPU (2 GB on
 * the HTP): whole layers go into a part while they fit; the first part also holds the embedding, the last the final
 * norm and the LM head (a tied embedding counts in both), every part the RoPE tables. A model that fits is one part.
 */
public final class GraphParts {
    /**
     * Layers [from, to) of one part; with {@code embed}, the token embedding before them (a part of the embedding
     * alone has no layers); the last part also holds the final norm and the LM head.
     */
    public record Part(int from, int to, boolean embed, boolean last) {
    }

    private GraphParts() {
    }

    /** The name of the residual stream entering layer {@code layer}: the output of one part, the input of the next. */
    public static String hidden(int layer) {
        return "hidden_states." + layer;
    }

    /**
     * The parts of a static export; with {@code embeddingApart} (Genie's layout) the embedding is a part of its own
     * and the layers' parts follow.
     */
    static List<Part> plan(ModelConfig c, WeightFile w, long limit, boolean embeddingApart) {
        Map<String, WeightFile.Stored> stored = w.stored();
        long shared = bytes(stored, WeightFile.ROPE_COS) + bytes(stored, WeightFile.ROPE_SIN); // none in a Genie export
        long embed = bytes(stored, TensorNames.EMBED);
        long head = bytes(stored, TensorNames.FINAL_NORM) + bytes(stored, c.tieWordEmbeddings() ? TensorNames.EMBED : TensorNames.LM_HEAD);
        long[] layer = new long[c.numLayers()];
        stored.forEach((name, s) -> {
            for (int i = 0; i < layer.length; i++) {
                if (name.startsWith(TensorNames.layer(i))) {
                    layer[i] += s.location().length();
                }
            }
        });
        List<Part> parts = new ArrayList<>();
        if (embeddingApart) {
            if (embed > limit) {
                throw new ExportException("the token embedding alone needs " + embed + " bytes of weights, over the per-graph limit of "
                        + limit + " bytes: quantize it (quantize.head: int8 or int4)");
            }
            parts.add(new Part(0, 0, true, false));
        }
        boolean embedFirst = !embeddingApart;
        int from = 0;
        long size = shared + (embedFirst ? embed : 0);
        for (int i = 0; i < layer.length; i++) {
            if (size + layer[i] > limit && i > from) {
                parts.add(new Part(from, i, embedFirst && from == 0, false));
                from = i;
                size = shared;
            }
            size += layer[i];
            if (size > limit) {
                throw new ExportException("layer " + i + " alone needs " + size + " bytes of weights with what its graph must hold, over the "
                        + "per-graph limit of " + limit + " bytes: quantize to fewer bits");
            }
        }
        if (size + head > limit) {
            parts.add(new Part(from, layer.length, embedFirst && from == 0, false));
            from = layer.length;
            size = shared;
        }
        if (size + head > limit) {
            throw new ExportException("the LM head alone needs " + (shared + head) + " bytes of weights, over the per-graph limit of "
                    + limit + " bytes: quantize to fewer bits");
        }
        parts.add(new Part(from, layer.length, embedFirst && from == 0, true));
        return parts;
    }

    /** The bytes of the tensor {@code name}, or of the tensors a quantized format wrote for it ({@code name_...}). */
    static long bytes(Map<String, WeightFile.Stored> stored, String name) {
        long sum = 0;
        for (WeightFile.Stored s : stored.values()) {
            if (s.name().equals(name) || s.name().startsWith(name + "_")) {
                sum += s.location().length();
            }
        }
        return sum;
    }
}
