package dev.hexforge.onnx.runtime;

import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Runs work on a thread with a 64 MB stack. ONNX Runtime's session set-up recurses deeply over a decoder's graph, in
 * native code where a Java thread's default 1 MB stack has no guard the JVM can report: a stage service's worker
 * thread died of SIGSEGV in it. Sessions a pass opens in a service are opened and run here.
 */
public final class LargeStack {
    static final long STACK_BYTES = 64L << 20;

    private LargeStack() {
    }

    public static <T> T call(String name, Callable<T> work) {
        AtomicReference<T> result = new AtomicReference<>();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Thread t = new Thread(null, () -> {
            try {
                result.set(work.call());
            } catch (Throwable e) {
                failure.set(e);
            }
        }, name, STACK_BYTES);
        t.start();
        try {
            t.join();
        } catch (InterruptedException e) {
            t.interrupt();
            Thread.currentThread().interrupt();
            throw new OnnxRuntimeException("interrupted while " + name + " ran", e);
        }
        Throwable e = failure.get();
        if (e instanceof RuntimeException r) {
            throw r;
        }
        if (e instanceof Error err) {
            throw err;
        }
        if (e != null) {
            throw new OnnxRuntimeException(name + " failed: " + e.getMessage(), e);
        }
        return result.get();
    }
}
