package dev.hexforge.lora.train;

/**
 * One tokenized training sequence. {@code target[p]} is true when token p is predicted in the loss (the response
 * tokens of an instruction or chat example; every token but the first of plain text).
 */
public record TrainingExample(int[] tokens, boolean[] target) {

    public TrainingExample {
        if (tokens.length != target.length) {
            throw new IllegalArgumentException("tokens and target mask differ in length");
        }
        if (tokens.length > 0 && target[0]) {
            throw new IllegalArgumentException("the first token cannot be a target (nothing precedes it)");
        }
    }

    public int targetCount() {
        int n = 0;
        for (boolean b : target) {
            if (b) {
                n++;
            }
        }
        return n;
    }

    /** Tokens fed to the model: all but the last. */
    public int inputLength() {
        return tokens.length - 1;
    }
}
