package dev.hexforge.stage;

import dev.hexforge.contracts.InputPolicy;
import dev.hexforge.contracts.Stage;
import dev.hexforge.store.ArtifactStore;

import java.time.Duration;
import java.util.function.Supplier;

/**
 * What an attempt ({@link AttemptRun}) needs of the worker that runs it: its stage, where it sends its events, the
 * object store and the archive cache it reads inputs from, the input roots, how often it reports, and how a call is
 * tried again while a dependency is away.
 */
record AttemptServices(Stage stage, StageEventSender events, ArtifactStore store, ArchiveCache archives, InputPolicy inputs,
                       Duration heartbeat, Duration progressInterval, WhileAway retry) {

    /** Runs a call, trying it again while what it needs is away, telling {@code waiting} each time. */
    interface WhileAway {
        <T> T retry(Supplier<T> call, Runnable waiting);
    }
}
