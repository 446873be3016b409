package dev.hexforge.cli;

import dev.hexforge.progress.Progress;

import java.io.PrintStream;

/**
 * A progress bar on stderr. It appears only after the operation has run for a second, redraws at most ten times
 * a second, and on a non-terminal prints a plain line every few seconds instead of carriage returns.
 */
final class ProgressBar implements Progress, AutoCloseable {
    private final String label;
    private final PrintStream err;
    private final boolean terminal;
    private final long start = System.nanoTime();
    private long lastDraw;
    private boolean drawn;
    private boolean finished;

    ProgressBar(String label) {
        this.label = label;
        this.err = System.err;
        this.terminal = System.console() != null;
    }

    @Override
    public void update(String what, long done, long total) {
        Stop.check(); // a pass unwinds here when the process was told to end
        long now = System.nanoTime();
        if (now - start < 1_000_000_000L || now - lastDraw < (terminal ? 100_000_000L : 5_000_000_000L)) {
            return;
        }
        lastDraw = now;
        draw(total > 0 ? Math.min(1.0, (double) done / total) : 0, what, now);
    }

    private void draw(double frac, String what, long now) {
        drawn = true;
        int width = 30;
        int filled = (int) (frac * width);
        String bar = "=".repeat(filled) + (filled < width ? ">" : "") + " ".repeat(Math.max(0, width - filled - 1));
        String line = String.format("%s [%s] %3.0f%% %s %.1fs", label, bar, frac * 100, what, (now - start) / 1e9);
        if (terminal) {
            err.print("\r" + line + "\033[K");
        } else {
            err.println(line);
        }
    }

    /**
     * The operation succeeded: a bar that was showing ends on a 100% frame and its own line, before the command
     * prints its result. (Passes need not report a last step equal to their total.)
     */
    void finish() {
        if (drawn && !finished) {
            draw(1.0, "done", System.nanoTime());
            if (terminal) {
                err.println();
            }
        }
        finished = true;
    }

    @Override
    public void close() {
        if (drawn && terminal && !finished) { // a failure: the message goes on a line of its own
            err.println();
        }
    }
}
