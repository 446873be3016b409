package dev.hexforge.contracts;

import java.util.List;
import java.util.stream.Collectors;

/** A job spec was refused; it carries every problem found, not just the first. */
public class InvalidJobSpecException extends RuntimeException {
    private final List<Problem> problems;

    public InvalidJobSpecException(List<Problem> problems) {
        super("invalid job spec: " + problems.stream().map(Problem::toString).collect(Collectors.joining("; ")));
        this.problems = List.copyOf(problems);
    }

    public List<Problem> problems() {
        return problems;
    }
}
