package dev.hexforge.forward;

import dev.hexforge.checkpoint.ModelConfig;

/** Keys (after RoPE) and values of every past position, per layer, laid out [position][kvHeads * headDim]. */
public final class KvCache {
    private final int capacity;
    private final int kvSize;
    private final float[][] keys;
    private final float[][] values;
    private int length;

    public KvCache(ModelConfig config, int capacity) {
        this.capacity = capacity;
        this.kvSize = config.kvSize();
        this.keys = new float[config.numLayers()][capacity * kvSize];
        this.values = new float[config.numLayers()][capacity * kvSize];
    }

    public int length() {
        return length;
    }

    public int capacity() {
        return capacity;
    }

    float[] keys(int layer) {
        return keys[layer];
    }

    float[] values(int layer) {
        return values[layer];
    }

    void advance() {
        length++;
    }

    void checkRoom(int tokens) {
        if (length + tokens > capacity) {
            throw new IllegalStateException("KV cache holds " + capacity + " positions; " + length + " used, "
                    + tokens + " more asked");
        }
    }

    public void clear() {
        length = 0;
    }
}
