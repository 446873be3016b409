package dev.hexforge.contracts;

/** One thing wrong with a submitted document: where (a JSON path such as {@code quantize.bits}) and what. */
public record Problem(String path, String message) {
    @Override
    public String toString() {
        return (path.isEmpty() ? "(document)" : path) + ": " + message;
    }
}
