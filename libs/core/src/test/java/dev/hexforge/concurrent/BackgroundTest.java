package dev.hexforge.concurrent;

import org.junit.jupiter.api.Test;

import java.io.UncheckedIOException;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;

class BackgroundTest {

    @Test
    void theWorkRunsOnAThreadOfItsOwnAndItsResultIsJoined() {
        Thread caller = Thread.currentThread();
        Background<Thread> b = Background.start("hexforge-test", Thread::currentThread);
        Thread ran = b.join();
        assertNotEquals(caller, ran);
        assertEquals("hexforge-test", ran.getName());
    }

    @Test
    void aFailureIsThrownAsItWasByJoinAndNotByAwait() {
        UncheckedIOException failure = new UncheckedIOException("disk full", new java.io.IOException("disk full"));
        Background<Void> b = Background.run("hexforge-test", () -> {
            throw failure;
        });
        b.await();
        assertSame(failure, assertThrows(UncheckedIOException.class, b::join));
        assertThrows(OutOfMemoryError.class, Background.start("hexforge-test", () -> {
            throw new OutOfMemoryError("test");
        })::join);
    }
}
