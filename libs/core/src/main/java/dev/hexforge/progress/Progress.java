package dev.hexforge.progress;

/** Receives progress of a long operation: {@code done} of {@code total} units, with what is being done now. */
@FunctionalInterface
public interface Progress {
    Progress NONE = (what, done, total) -> { };

    void update(String what, long done, long total);
}
