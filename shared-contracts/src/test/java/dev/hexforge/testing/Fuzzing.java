package dev.hexforge.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.stream.Stream;

/**
 * What a fuzz target holds every parser to: outside bytes either parse or are refused with one of the parser's own
 * errors, whose message says what was wrong. Anything else escaping (a NullPointerException, an index out of bounds, an
 * OutOfMemoryError, an error without a message) is a finding: Jazzer keeps its input, and CI replays it.
 */
public final class Fuzzing {
    /** How long {@code JAZZER_FUZZ=1} fuzzes one target (tools/fuzz/run.sh runs each in turn); CI replays the inputs only. */
    public static final String DURATION = "60s";
    private static Path scratch;

    private Fuzzing() {
    }

    /** A body that reads outside bytes. */
    public interface Body {
        void run() throws Exception;
    }

    /** Runs {@code body}; an error of one of the {@code refusals} with a message passes, anything else is rethrown. */
    @SafeVarargs
    public static void refusedClearly(Body body, Class<? extends Throwable>... refusals) {
        try {
            body.run();
        } catch (Throwable t) {
            for (Class<? extends Throwable> ok : refusals) {
                if (ok.isInstance(t) && t.getMessage() != null && !t.getMessage().isBlank()) {
                    return;
                }
            }
            throw new AssertionError("not a clear refusal: " + t, t);
        }
    }

    /** An empty folder for one input's files, the same one each time (a fuzzer runs millions of inputs). */
    public static synchronized Path emptyFolder() {
        try {
            if (scratch == null) {
                scratch = Files.createTempDirectory("hexforge-fuzz");
                Runtime.getRuntime().addShutdownHook(new Thread(() -> delete(scratch)));
            }
            try (Stream<Path> s = Files.list(scratch)) {
                s.forEach(Fuzzing::delete);
            }
            return scratch;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static void delete(Path p) {
        try (Stream<Path> s = Files.walk(p)) {
            s.sorted(Comparator.reverseOrder()).forEach(x -> x.toFile().delete());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
