package dev.hexforge.kernels;

/**
 * A weight matrix [rows, cols] that training reads but never changes (a frozen linear, the embedding, the LM head),
 * row-major like Hugging Face's [out, in]. Its products in {@link Kernels} are laid out for what training has: few
 * rows of activations against a weight too large for the cache, so each value of the weight is read from memory once
 * a product.
 */
public record FrozenMatrix(float[] values, int rows, int cols) {
    public FrozenMatrix {
        if ((long) rows * cols != values.length) {
            throw new IllegalArgumentException("a [" + rows + ", " + cols + "] matrix has " + (long) rows * cols
                    + " values, not " + values.length);
        }
    }
}
