package dev.hexforge.onnx.runtime;

import ai.onnxruntime.OrtException;
import ai.onnxruntime.OrtLoraAdapter;
import ai.onnxruntime.OrtSession;

import java.time.Duration;
import java.util.HashSet;
import java.util.Set;

/**
 * Every ONNX Runtime run of Hexforge goes through here, with run options of its own, so that a process told to end
 * (SIGINT, SIGTERM) stops its native work through ONNX Runtime's own termination ({@code RunOptions} set to
 * terminate) and waits for it to return before anything is closed: a JVM that exits under a running session crashes
 * in ONNX Runtime's native code. After {@link #stop} no run starts, and one in flight ends with {@link Stopped}. A
 * shutdown hook stops them too, so a stage service or device runner ended by SIGTERM waits for its runs to end.
 */
public final class OrtRuns {
    private static final Set<OrtSession.RunOptions> ACTIVE = new HashSet<>();
    private static boolean stopping;

    static {
        // any JVM that runs sessions (the CLI, the stage services, the device runner) ends them before it exits: the
        // exit waits for this hook, so nothing is unloaded under a run in flight
        Runtime.getRuntime().addShutdownHook(new Thread(() -> stop(Duration.ofSeconds(30)), "hexforge-ort-stop"));
    }

    private OrtRuns() {
    }

    /** A run in flight ended, or one was refused, because the process is stopping. */
    public static final class Stopped extends OnnxRuntimeException {
        Stopped() {
            super("stopped: the process was asked to end", null);
        }
    }

    /** One run of a session with the given options. */
    public interface Call {
        OrtSession.Result run(OrtSession.RunOptions options) throws OrtException;
    }

    /** Runs {@code call} with run options that {@link #stop} can terminate. */
    public static OrtSession.Result run(Call call) throws OrtException {
        return run(null, call);
    }

    /** As {@link #run(Call)}, with {@code adapter} (null for none) active: ONNX Runtime feeds its parameters. */
    public static OrtSession.Result run(OrtLoraAdapter adapter, Call call) throws OrtException {
        OrtSession.RunOptions options = new OrtSession.RunOptions();
        if (adapter != null) {
            try {
                options.addActiveLoraAdapter(adapter);
            } catch (OrtException e) {
                options.close();
                throw e;
            }
        }
        synchronized (ACTIVE) {
            if (stopping) {
                options.close();
                throw new Stopped();
            }
            ACTIVE.add(options);
        }
        try {
            return call.run(options);
        } catch (OrtException e) {
            if (stopping()) {
                throw new Stopped();
            }
            throw e;
        } finally {
            synchronized (ACTIVE) {
                ACTIVE.remove(options);
                ACTIVE.notifyAll();
            }
            options.close();
        }
    }

    static boolean stopping() {
        synchronized (ACTIVE) {
            return stopping;
        }
    }

    /**
     * Refuses new runs, asks every run in flight to terminate, and waits up to {@code wait} for them to return; true
     * when none is left.
     */
    public static boolean stop(Duration wait) {
        long deadline = System.nanoTime() + wait.toNanos();
        synchronized (ACTIVE) {
            stopping = true;
            for (OrtSession.RunOptions o : ACTIVE) {
                try {
                    o.setTerminate(true);
                } catch (OrtException e) {
                    // the run ends by itself then
                }
            }
            while (!ACTIVE.isEmpty()) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    return false;
                }
                try {
                    ACTIVE.wait(Math.max(1, left / 1_000_000));
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return ACTIVE.isEmpty();
                }
            }
            return true;
        }
    }
}
