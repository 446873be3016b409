package dev.hexforge.gateway.job;

import dev.hexforge.contracts.ContractsJson;
import dev.hexforge.contracts.JobSpec;
import jakarta.persistence.Column;
import jakarta.persistence.Embedded;
import jakarta.persistence.Entity;
import jakarta.persistence.EnumType;
import jakarta.persistence.Enumerated;
import jakarta.persistence.Id;
import jakarta.persistence.Table;
import jakarta.persistence.Transient;
import jakarta.persistence.Version;

import java.time.Instant;
import java.util.UUID;

@Entity
@Table(name = "jobs")
public class JobEntity {
    public enum State { RUNNING, COMPLETED, FAILED, CANCELLED }

    @Id
    public UUID id;
    /** Optimistic lock: a transition made on a stale copy (cancel racing a completion, say) fails and is retried. */
    @Version
    Long version;
    @Column(nullable = false)
    public String tenant;
    public String name;
    @Column(nullable = false, columnDefinition = "text")
    String spec;
    /** The spec as read once for this row's instance: it never changes after submission. */
    @Transient
    private JobSpec parsed;
    @Column(nullable = false)
    @Enumerated(EnumType.STRING)
    State state;
    @Column(name = "current_stage")
    String currentStage;
    @Column(name = "current_attempt")
    UUID currentAttempt;
    @Embedded
    public ErrorInfo error;
    @Column(name = "created_at", nullable = false)
    Instant createdAt;
    @Column(name = "updated_at", nullable = false)
    Instant updatedAt;

    /** The job's spec, read from its stored JSON once per loaded row. */
    public JobSpec spec() {
        if (parsed == null) {
            parsed = ContractsJson.read(spec, JobSpec.class);
        }
        return parsed;
    }

    /** Stores the validated spec (as JSON) and keeps it as given. */
    public void spec(JobSpec given) {
        spec = ContractsJson.write(given);
        parsed = given;
    }
}
