package dev.hexforge.concurrent;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.function.Supplier;

/**
 * Work started at once on a daemon thread of its own (not a shared pool, whose few workers the caller's parallel
 * loops need), its result asked for later: for I/O that can run beside the caller's arithmetic.
 */
public final class Background<T> {
    private final CompletableFuture<T> result = new CompletableFuture<>();

    private Background() {
    }

    public static <T> Background<T> start(String name, Supplier<T> work) {
        Background<T> b = new Background<>();
        Thread t = new Thread(() -> {
            try {
                b.result.complete(work.get());
            } catch (Throwable e) {
                b.result.completeExceptionally(e);
            }
        }, name);
        t.setDaemon(true);
        t.start();
        return b;
    }

    public static Background<Void> run(String name, Runnable work) {
        return start(name, () -> {
            work.run();
            return null;
        });
    }

    public static <T> Background<T> done(T value) {
        Background<T> b = new Background<>();
        b.result.complete(value);
        return b;
    }

    /** The result, waiting for it; the work's exception or error is thrown as it was. */
    public T join() {
        try {
            return result.join();
        } catch (CompletionException e) {
            if (e.getCause() instanceof RuntimeException r) {
                throw r;
            }
            if (e.getCause() instanceof Error err) {
                throw err;
            }
            throw e;
        }
    }

    /** Waits for the work to end, however it ends. */
    public void await() {
        try {
            result.join();
        } catch (RuntimeException e) {
            // the caller asks for the outcome with join when it needs it
        }
    }
}
