package dev.hexforge.quant.calib;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Calibration sequences of equal length stacked into batches of at most {@value #MAX_ROWS} rows, so that a layer's
 * products run over thousands of rows at once (and a weight is prepared once per batch, not once per sequence)
 * while one batch's trace through a layer stays small. Batches keep the sequences' first-seen order of lengths.
 */
public final class SequenceBatches {
    static final int MAX_ROWS = 4096;

    /** {@code count} sequences of {@code length} tokens; {@code x} their hidden states, [count * length, hidden]. */
    public static final class Batch {
        public final int length;
        public final int count;
        public float[] x;

        Batch(int length, int count, float[] x) {
            this.length = length;
            this.count = count;
            this.x = x;
        }

        public int rows() {
            return length * count;
        }
    }

    private SequenceBatches() {
    }

    /** The embedded sequences, batched. */
    public static List<Batch> of(List<int[]> sequences, LayerSource source) {
        Map<Integer, List<int[]>> byLength = new LinkedHashMap<>();
        for (int[] s : sequences) {
            byLength.computeIfAbsent(s.length, k -> new ArrayList<>()).add(s);
        }
        List<Batch> out = new ArrayList<>();
        for (var e : byLength.entrySet()) {
            int len = e.getKey();
            int per = Math.max(1, MAX_ROWS / len);
            List<int[]> same = e.getValue();
            for (int from = 0; from < same.size(); from += per) {
                List<int[]> part = same.subList(from, Math.min(same.size(), from + per));
                int[] ids = new int[part.size() * len];
                for (int i = 0; i < part.size(); i++) {
                    System.arraycopy(part.get(i), 0, ids, i * len, len);
                }
                out.add(new Batch(len, part.size(), source.embed(ids)));
            }
        }
        return out;
    }

    /** The batches' hidden states, in order (what a layer journal keeps). */
    public static List<float[]> hidden(List<Batch> batches) {
        return batches.stream().map(b -> b.x).toList();
    }

    /** Puts saved hidden states back into the same batches, checking that they are the same batches. */
    public static void restore(List<Batch> batches, List<float[]> hidden) {
        if (hidden.size() != batches.size()) {
            throw new IllegalStateException("the saved state has " + hidden.size() + " batches of hidden states, this run "
                    + batches.size());
        }
        for (int i = 0; i < batches.size(); i++) {
            if (hidden.get(i).length != batches.get(i).x.length) {
                throw new IllegalStateException("the saved hidden states of batch " + i + " have " + hidden.get(i).length
                        + " values, this run " + batches.get(i).x.length);
            }
            batches.get(i).x = hidden.get(i);
        }
    }
}
