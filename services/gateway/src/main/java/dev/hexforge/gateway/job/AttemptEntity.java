package dev.hexforge.gateway.job;

import jakarta.persistence.Column;
import jakarta.persistence.Embedded;
import jakarta.persistence.Entity;
import jakarta.persistence.EnumType;
import jakarta.persistence.Enumerated;
import jakarta.persistence.Id;
import jakarta.persistence.Table;
import jakarta.persistence.Version;

import java.time.Instant;
import java.util.UUID;

@Entity
@Table(name = "stage_attempts")
public class AttemptEntity {
    public enum State { DISPATCHED, RUNNING, COMPLETED, FAILED, CANCELLED, SUPERSEDED }

    @Id
    UUID id;
    /** Optimistic lock: a transition made on a stale copy (cancel racing a completion, say) fails and is retried. */
    @Version
    Long version;
    @Column(name = "job_id", nullable = false)
    public UUID jobId;
    @Column(nullable = false)
    String stage;
    @Column(name = "attempt_no", nullable = false)
    int attemptNo;
    @Enumerated(EnumType.STRING)
    @Column(nullable = false)
    State state;
    double progress;
    @Column(columnDefinition = "text")
    String message;
    @Column(nullable = false, columnDefinition = "text")
    String inputs;
    @Column(columnDefinition = "text")
    String outputs;
    @Column(columnDefinition = "text")
    public String report;
    /** The latest value of every metric the stage reported in its progress (loss, eval loss, tokens/s, ...). */
    @Column(columnDefinition = "text")
    String metrics;
    @Embedded
    ErrorInfo error;
    @Column(name = "started_at", nullable = false)
    Instant startedAt;
    @Column(name = "updated_at", nullable = false)
    Instant updatedAt;
    @Column(name = "finished_at")
    public Instant finishedAt;
    /** When the stage service reported the attempt started, and completed (its clock): queue time vs run time. */
    @Column(name = "worker_started_at")
    Instant workerStartedAt;
    @Column(name = "worker_finished_at")
    Instant workerFinishedAt;
}
