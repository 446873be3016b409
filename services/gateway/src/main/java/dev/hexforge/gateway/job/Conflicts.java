package dev.hexforge.gateway.job;

import org.springframework.dao.OptimisticLockingFailureException;

import java.util.concurrent.ThreadLocalRandom;
import java.util.function.Supplier;

/**
 * Runs a state-machine step (its own transaction) again when it lost an optimistic-lock race: the step re-reads the job
 * and decides afresh, so a cancel racing a completion ends in one consistent state, never a lost update. Tries are a
 * few random milliseconds apart, growing, so two writers that collided do not collide again in lockstep.
 */
public final class Conflicts {
    static final int TRIES = 5;

    private Conflicts() {
    }

    public static <T> T retry(Supplier<T> step) {
        for (int i = 1; ; i++) {
            try {
                return step.get();
            } catch (OptimisticLockingFailureException e) {
                if (i >= TRIES) {
                    throw e;
                }
                try {
                    Thread.sleep(ThreadLocalRandom.current().nextLong(1, 1L + 5L * i));
                } catch (InterruptedException x) {
                    Thread.currentThread().interrupt();
                    throw e;
                }
            }
        }
    }
}
