package dev.hexforge.gateway.job;

import dev.hexforge.contracts.ContractsJson;
import dev.hexforge.contracts.ErrorCode;
import dev.hexforge.contracts.Stage;
import dev.hexforge.contracts.StageEvents;

import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * The rules of the job state machine, apart from storage and messaging: what a stage event, a cancel, a resume, a
 * stall or an event the gateway cannot apply does to a job and its current attempt. {@link JobService} loads the
 * rows, applies these rules, and writes the rows, the outbox messages and the next dispatch in one transaction.
 *
 * <p>A job is RUNNING until its last stage completes (COMPLETED), a stage fails (FAILED) or a tenant cancels it
 * (CANCELLED); a failed or cancelled job can be resumed, which runs the same stage again. An attempt is DISPATCHED
 * until its service reports, RUNNING from its first progress event, then COMPLETED, FAILED or CANCELLED. Only the
 * job's current attempt of a running job moves; events of any other are ignored.
 */
final class JobStateMachine {
    private JobStateMachine() {
    }

    /** What an event did: nothing (it was for an attempt no longer current), or applied, with the stage to start next. */
    record Outcome(boolean applied, Stage next) {
        static final Outcome IGNORED = new Outcome(false, null);
    }

    /** What a stall did. */
    enum Stall { NOT_CURRENT, REDISPATCH, GAVE_UP }

    /** A new attempt of {@code stage}, the job's current one from now on. */
    static AttemptEntity dispatch(JobEntity j, Stage stage, int earlierAttemptsOfStage, String inputs, Instant now) {
        AttemptEntity a = new AttemptEntity();
        a.id = UUID.randomUUID();
        a.jobId = j.id;
        a.stage = stage.id();
        a.attemptNo = earlierAttemptsOfStage + 1;
        a.state = AttemptEntity.State.DISPATCHED;
        a.inputs = inputs;
        a.startedAt = now;
        a.updatedAt = now;
        j.currentStage = stage.id();
        j.currentAttempt = a.id;
        j.updatedAt = now;
        return a;
    }

    /**
     * Applies a stage service's event to the job and its attempt {@code a}.
     *
     * @throws IllegalArgumentException for an event that contradicts the attempt (another stage's, or a completion
     *                                  without the outputs every stage but benchmark stores)
     */
    static Outcome apply(JobEntity j, AttemptEntity a, List<Stage> stages, StageEvents.Event e, Instant now) {
        if (!a.id.equals(j.currentAttempt) || j.state != JobEntity.State.RUNNING) {
            return Outcome.IGNORED;
        }
        if (!a.stage.equals(e.stage().id())) {
            throw new IllegalArgumentException("a " + e.stage().id() + " event for attempt " + a.id + ", which is of the " + a.stage + " stage");
        }
        if (e instanceof StageEvents.Completed c && e.stage() != Stage.BENCHMARK && (c.outputs() == null || c.outputs().isEmpty())) {
            throw new IllegalArgumentException("a completed " + a.stage + " event without outputs (every " + a.stage + " attempt stores one)");
        }
        a.updatedAt = now;
        j.updatedAt = now;
        if (a.workerStartedAt == null) {
            a.workerStartedAt = e.at();
        }
        if (e instanceof StageEvents.Progress p) {
            a.state = AttemptEntity.State.RUNNING;
            if (p.percent() >= 0) {
                a.progress = p.percent();
            }
            a.message = p.message();
            if (p.metrics() != null && !p.metrics().isEmpty()) {
                Map<String, Object> latest = new LinkedHashMap<>();
                if (a.metrics != null) {
                    latest.putAll(ContractsJson.read(a.metrics, Map.class));
                }
                latest.putAll(p.metrics());
                a.metrics = ContractsJson.write(latest);
            }
            return new Outcome(true, null);
        }
        if (e instanceof StageEvents.Completed c) {
            a.state = AttemptEntity.State.COMPLETED;
            a.workerFinishedAt = c.at();
            a.progress = 100;
            a.outputs = ContractsJson.write(c.outputs());
            a.report = ContractsJson.write(c.report());
            a.finishedAt = now;
            int next = stages.indexOf(c.stage()) + 1;
            if (next < stages.size()) {
                return new Outcome(true, stages.get(next));
            }
            j.state = JobEntity.State.COMPLETED;
            return new Outcome(true, null);
        }
        StageEvents.Failed f = (StageEvents.Failed) e;
        a.state = AttemptEntity.State.FAILED;
        a.finishedAt = now;
        a.error = new ErrorInfo(f.error().code(), f.error().message(), f.error().hint());
        a.report = ContractsJson.write(f.report());
        fail(j, f.error().code(), f.error().message(), f.error().hint(), now);
        return new Outcome(true, null);
    }

    /**
     * An event of the current attempt the gateway could not apply after its retries fails the job with
     * EVENT_UNPROCESSABLE; false when the job no longer runs (nothing changes then). {@code a} is the event's
     * attempt, null when unknown.
     */
    static boolean unprocessable(JobEntity j, AttemptEntity a, StageEvents.Event e, String reason, String deadLetterTopic, Instant now) {
        if (j.state != JobEntity.State.RUNNING) {
            return false;
        }
        String type = e instanceof StageEvents.Progress ? "progress" : e instanceof StageEvents.Completed ? "completed" : "failed";
        if (a != null && a.id.equals(j.currentAttempt)) {
            a.state = AttemptEntity.State.FAILED;
            a.finishedAt = now;
            a.updatedAt = now;
            a.error = new ErrorInfo(ErrorCode.EVENT_UNPROCESSABLE.name(), "the gateway could not apply the " + type
                    + " event of this attempt: " + reason, null);
        }
        fail(j, ErrorCode.EVENT_UNPROCESSABLE.name(), "the gateway could not apply the " + e.stage().id() + " service's " + type
                + " event of attempt " + e.attemptId() + ": " + reason + "; the event is kept on " + deadLetterTopic,
                "resume the job to run the stage again; report it if it persists", now);
        return true;
    }

    /**
     * A tenant cancels a running job; its current attempt ({@code a}, null if gone) is cancelled with it.
     *
     * @throws IllegalStateException when the job is not running
     */
    static void cancel(JobEntity j, AttemptEntity a, Instant now) {
        if (j.state != JobEntity.State.RUNNING) {
            throw new IllegalStateException("job " + j.id + " is " + j.state.name().toLowerCase() + "; only running jobs can be cancelled");
        }
        j.state = JobEntity.State.CANCELLED;
        j.updatedAt = now;
        if (a != null) {
            a.state = AttemptEntity.State.CANCELLED;
            a.finishedAt = now;
        }
    }

    /**
     * A failed or cancelled job runs again from the stage it stopped at (the caller dispatches it).
     *
     * @throws IllegalStateException when the job is running or completed
     */
    static void resume(JobEntity j) {
        if (j.state != JobEntity.State.FAILED && j.state != JobEntity.State.CANCELLED) {
            throw new IllegalStateException("job " + j.id + " is " + j.state.name().toLowerCase() + "; only failed or cancelled jobs can be resumed");
        }
        j.state = JobEntity.State.RUNNING;
        j.error = null;
    }

    /**
     * An attempt that went silent for {@code silence}: it fails as STAGE_STALLED and is to be dispatched again, unless
     * its stage has had {@code maxAttempts}; then the job fails with the stall as its error. Attempts no longer
     * current, or finished, are left alone.
     */
    static Stall stalled(JobEntity j, AttemptEntity a, Duration silence, int maxAttempts, Instant now) {
        if (j.state != JobEntity.State.RUNNING || !a.id.equals(j.currentAttempt)
                || (a.state != AttemptEntity.State.RUNNING && a.state != AttemptEntity.State.DISPATCHED)) {
            return Stall.NOT_CURRENT;
        }
        String msg = a.state == AttemptEntity.State.DISPATCHED
                ? "no " + a.stage + " service started the attempt within " + silence.toSeconds() + " s (its request was lost, or "
                + "every " + a.stage + " service was busy or down)"
                : "no progress from the " + a.stage + " service for " + silence.toSeconds() + " s (it stopped or hangs)";
        a.state = AttemptEntity.State.FAILED;
        a.finishedAt = now;
        a.updatedAt = now;
        if (a.attemptNo >= maxAttempts) {
            String hint = "check the " + a.stage + " service's logs and resources, then resume the job";
            a.error = new ErrorInfo(ErrorCode.STAGE_STALLED.name(), msg, hint);
            fail(j, ErrorCode.STAGE_STALLED.name(), msg + "; gave up after " + a.attemptNo + " attempts", hint, now);
            return Stall.GAVE_UP;
        }
        a.error = new ErrorInfo(ErrorCode.STAGE_STALLED.name(), msg, "re-dispatched as attempt " + (a.attemptNo + 1));
        return Stall.REDISPATCH;
    }

    private static void fail(JobEntity j, String code, String message, String hint, Instant now) {
        j.state = JobEntity.State.FAILED;
        j.error = new ErrorInfo(code, message, hint);
        j.updatedAt = now;
    }
}
