package dev.hexforge.gateway.job;

import dev.hexforge.contracts.ContractsJson;
import dev.hexforge.contracts.Stage;
import dev.hexforge.contracts.StageEvents;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The job state machine's rules on plain rows: every transition, and every event it must ignore or refuse. */
class JobStateMachineTest {
    private static final List<Stage> STAGES = List.of(Stage.QUANTIZE, Stage.EXPORT, Stage.SIGN);
    private static final Instant T0 = Instant.parse("2026-12-03T10:00:00Z");
    private static final StageEvents.ArtifactRef OUT = new StageEvents.ArtifactRef("a1", "quantized-checkpoint", "ab", 10, "k");

    private final JobEntity job = newJob();
    private final AttemptEntity quantize = JobStateMachine.dispatch(job, Stage.QUANTIZE, 0, "[]", T0);

    private static JobEntity newJob() {
        JobEntity j = new JobEntity();
        j.id = UUID.randomUUID();
        j.tenant = "t";
        j.state = JobEntity.State.RUNNING;
        j.createdAt = T0;
        j.updatedAt = T0;
        return j;
    }

    private StageEvents.Progress progress(AttemptEntity a, double percent, Map<String, Double> metrics) {
        return new StageEvents.Progress(StageEvents.SCHEMA_VERSION, job.id.toString(), a.id.toString(), Stage.parse(a.stage),
                T0.plusSeconds(1), percent, "step", metrics);
    }

    private StageEvents.Completed completed(AttemptEntity a, List<StageEvents.ArtifactRef> outputs) {
        return new StageEvents.Completed(StageEvents.SCHEMA_VERSION, job.id.toString(), a.id.toString(), "t", Stage.parse(a.stage),
                T0.plusSeconds(5), outputs, Map.of("ok", true));
    }

    private StageEvents.Failed failed(AttemptEntity a) {
        return new StageEvents.Failed(StageEvents.SCHEMA_VERSION, job.id.toString(), a.id.toString(), Stage.parse(a.stage),
                T0.plusSeconds(5), new StageEvents.StageError("MODEL_INVALID", "no config.json", "upload a model folder"), Map.of());
    }

    @Test
    void aDispatchedAttemptIsTheJobsCurrentOneAndCountsTheStagesEarlierAttempts() {
        assertEquals(AttemptEntity.State.DISPATCHED, quantize.state);
        assertEquals(1, quantize.attemptNo);
        assertEquals(quantize.id, job.currentAttempt);
        assertEquals("quantize", job.currentStage);
        AttemptEntity again = JobStateMachine.dispatch(job, Stage.QUANTIZE, 2, "[]", T0);
        assertEquals(3, again.attemptNo);
        assertEquals(again.id, job.currentAttempt);
    }

    @Test
    void theFirstProgressMakesTheAttemptRunningAndMetricsKeepTheirLatestValue() {
        Instant now = T0.plusSeconds(2);
        assertEquals(new JobStateMachine.Outcome(true, null),
                JobStateMachine.apply(job, quantize, STAGES, progress(quantize, 10, Map.of("loss", 3.0, "lr", 1e-3)), now));
        assertEquals(AttemptEntity.State.RUNNING, quantize.state);
        assertEquals(T0.plusSeconds(1), quantize.workerStartedAt, "the service's clock");
        JobStateMachine.apply(job, quantize, STAGES, progress(quantize, -1, Map.of("loss", 2.0)), now);
        assertEquals(10, quantize.progress, "an unknown percentage keeps the last one");
        Map<?, ?> metrics = ContractsJson.read(quantize.metrics, Map.class);
        assertEquals(2.0, ((Number) metrics.get("loss")).doubleValue());
        assertEquals(1e-3, ((Number) metrics.get("lr")).doubleValue(), "metrics not reported again are kept");
        assertEquals(JobEntity.State.RUNNING, job.state);
        assertEquals(T0.plusSeconds(1), quantize.workerStartedAt, "set once");
    }

    @Test
    void aCompletedStageStartsTheNextAndTheLastCompletesTheJob() {
        JobStateMachine.Outcome o = JobStateMachine.apply(job, quantize, STAGES, completed(quantize, List.of(OUT)), T0.plusSeconds(6));
        assertEquals(new JobStateMachine.Outcome(true, Stage.EXPORT), o);
        assertEquals(AttemptEntity.State.COMPLETED, quantize.state);
        assertEquals(100, quantize.progress);
        assertTrue(quantize.outputs.contains("quantized-checkpoint"));
        assertEquals(JobEntity.State.RUNNING, job.state);

        AttemptEntity sign = JobStateMachine.dispatch(job, Stage.SIGN, 0, "[]", T0);
        assertEquals(new JobStateMachine.Outcome(true, null), JobStateMachine.apply(job, sign, STAGES, completed(sign, List.of(OUT)), T0));
        assertEquals(JobEntity.State.COMPLETED, job.state);
    }

    @Test
    void aFailedStageFailsTheJobWithItsError() {
        JobStateMachine.apply(job, quantize, STAGES, failed(quantize), T0.plusSeconds(6));
        assertEquals(AttemptEntity.State.FAILED, quantize.state);
        assertEquals(JobEntity.State.FAILED, job.state);
        assertEquals("MODEL_INVALID", job.error.code);
        assertEquals("no config.json", job.error.message);
        assertEquals("upload a model folder", job.error.hint);
    }

    @Test
    void eventsOfAnAttemptNoLongerCurrentOrOfAJobThatEndedChangeNothing() {
        AttemptEntity superseded = quantize;
        AttemptEntity current = JobStateMachine.dispatch(job, Stage.QUANTIZE, 1, "[]", T0);
        assertEquals(JobStateMachine.Outcome.IGNORED, JobStateMachine.apply(job, superseded, STAGES, completed(superseded, List.of(OUT)), T0));
        assertEquals(AttemptEntity.State.DISPATCHED, superseded.state);
        JobStateMachine.cancel(job, current, T0);
        assertEquals(JobStateMachine.Outcome.IGNORED, JobStateMachine.apply(job, current, STAGES, completed(current, List.of(OUT)), T0));
        assertEquals(AttemptEntity.State.CANCELLED, current.state);
        assertEquals(JobEntity.State.CANCELLED, job.state);
    }

    @Test
    void anEventThatContradictsItsAttemptIsRefused() {
        StageEvents.Progress other = new StageEvents.Progress(StageEvents.SCHEMA_VERSION, job.id.toString(), quantize.id.toString(),
                Stage.EXPORT, T0, 1, "x", Map.of());
        assertTrue(assertThrows(IllegalArgumentException.class, () -> JobStateMachine.apply(job, quantize, STAGES, other, T0))
                .getMessage().contains("which is of the quantize stage"));
        assertTrue(assertThrows(IllegalArgumentException.class,
                () -> JobStateMachine.apply(job, quantize, STAGES, completed(quantize, List.of()), T0)).getMessage().contains("without outputs"));
        assertEquals(AttemptEntity.State.DISPATCHED, quantize.state, "nothing changed");
        AttemptEntity bench = JobStateMachine.dispatch(job, Stage.BENCHMARK, 0, "[]", T0);
        assertTrue(JobStateMachine.apply(job, bench, List.of(Stage.BENCHMARK), completed(bench, List.of()), T0).applied(),
                "a benchmark stores no artifact");
    }

    @Test
    void onlyARunningJobCanBeCancelledAndOnlyAFailedOrCancelledOneResumed() {
        assertTrue(assertThrows(IllegalStateException.class, () -> JobStateMachine.resume(job)).getMessage().contains("is running"));
        JobStateMachine.apply(job, quantize, STAGES, failed(quantize), T0);
        assertTrue(assertThrows(IllegalStateException.class, () -> JobStateMachine.cancel(job, quantize, T0)).getMessage()
                .contains("is failed; only running jobs can be cancelled"));
        JobStateMachine.resume(job);
        assertEquals(JobEntity.State.RUNNING, job.state);
        assertNull(job.error);
        JobStateMachine.cancel(job, null, T0);
        assertEquals(JobEntity.State.CANCELLED, job.state);
        JobStateMachine.resume(job);
        assertEquals(JobEntity.State.RUNNING, job.state);
        job.state = JobEntity.State.COMPLETED;
        assertThrows(IllegalStateException.class, () -> JobStateMachine.resume(job));
    }

    @Test
    void aStalledAttemptIsDispatchedAgainUntilTheStageHadItsAttempts() {
        Duration silence = Duration.ofSeconds(90);
        assertEquals(JobStateMachine.Stall.REDISPATCH, JobStateMachine.stalled(job, quantize, silence, 2, T0));
        assertEquals(AttemptEntity.State.FAILED, quantize.state);
        assertEquals("STAGE_STALLED", quantize.error.code);
        assertTrue(quantize.error.message.contains("no quantize service started the attempt within 90 s"), quantize.error.message);
        assertEquals(JobEntity.State.RUNNING, job.state);
        assertEquals(JobStateMachine.Stall.NOT_CURRENT, JobStateMachine.stalled(job, quantize, silence, 2, T0), "already failed");

        AttemptEntity second = JobStateMachine.dispatch(job, Stage.QUANTIZE, 1, "[]", T0);
        JobStateMachine.apply(job, second, STAGES, progress(second, 5, Map.of()), T0);
        assertEquals(JobStateMachine.Stall.GAVE_UP, JobStateMachine.stalled(job, second, silence, 2, T0));
        assertEquals(JobEntity.State.FAILED, job.state);
        assertTrue(job.error.message.contains("no progress from the quantize service for 90 s")
                && job.error.message.contains("gave up after 2 attempts"), job.error.message);
    }

    @Test
    void anEventTheGatewayCannotApplyFailsARunningJobNamingWhereTheEventIsKept() {
        assertTrue(JobStateMachine.unprocessable(job, quantize, completed(quantize, List.of(OUT)), "bad row", "dead.v1", T0));
        assertEquals(AttemptEntity.State.FAILED, quantize.state);
        assertEquals("EVENT_UNPROCESSABLE", job.error.code);
        assertTrue(job.error.message.contains("completed event of attempt " + quantize.id) && job.error.message.contains("kept on dead.v1"),
                job.error.message);
        assertFalse(JobStateMachine.unprocessable(job, quantize, failed(quantize), "again", "dead.v1", T0), "the job ended already");
    }
}
