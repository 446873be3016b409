package dev.hexforge.cli;

import dev.hexforge.onnx.runtime.OrtRuns;

import java.time.Duration;
import java.util.List;

/**
 * A clean stop on Ctrl-C (SIGINT) and SIGTERM: ONNX Runtime's runs in flight are terminated through its own run
 * options and waited for (a JVM that exits under a running session crashes in native code), the pass unwinds at its
 * next progress report (it removes what it had started to write, so the output folder is untouched or complete; a
 * quantize or an export keeps its output folder's work, from which the same command continues), and
 * the command ends with one line and exit 130 or 143. A pass that does not unwind within {@link #GRACE} is ended
 * there; a second signal ends the process at once.
 */
final class Stop {
    static final Duration GRACE = Duration.ofSeconds(30);
    private static volatile String signal;
    private static volatile int exitCode;

    private Stop() {
    }

    /** The stop a pass's progress report raises: unwinds the pass like any failure, without an error of its own. */
    static final class StoppedException extends RuntimeException {
        StoppedException() {
            super("stopped by " + signal);
        }
    }

    /** Handles SIGINT and SIGTERM for the rest of the process. */
    static void install() {
        for (String name : List.of("INT", "TERM")) {
            try {
                sun.misc.Signal.handle(new sun.misc.Signal(name), s -> received("SIG" + s.getName(), 128 + s.getNumber()));
            } catch (IllegalArgumentException | UnsupportedOperationException notHere) {
                // a platform without this signal: the JVM's own handling stays
            }
        }
    }

    /** The signal being handled, or null. */
    static String signal() {
        return signal;
    }

    static int exitCode() {
        return exitCode;
    }

    /** Throws {@link StoppedException} once a stop was asked for: called at every progress report. */
    static void check() {
        if (signal != null) {
            throw new StoppedException();
        }
    }

    private static void received(String name, int code) {
        if (signal != null) {
            Runtime.getRuntime().halt(code); // asked twice: at once (native work was already told to end)
        }
        exitCode = code;
        signal = name;
        OrtRuns.stop(GRACE);
        Thread watchdog = new Thread(() -> {
            try {
                Thread.sleep(GRACE.toMillis());
            } catch (InterruptedException e) {
                return;
            }
            System.err.println("hexforge: stopped by " + name + " (the pass did not unwind within " + GRACE.toSeconds() + " s)");
            Runtime.getRuntime().halt(code);
        }, "hexforge-stop-watchdog");
        watchdog.setDaemon(true);
        watchdog.start();
    }
}
