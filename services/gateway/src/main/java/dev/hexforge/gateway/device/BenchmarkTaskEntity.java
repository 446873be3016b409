package dev.hexforge.gateway.device;

import jakarta.persistence.Column;
import jakarta.persistence.Entity;
import jakarta.persistence.EnumType;
import jakarta.persistence.Enumerated;
import jakarta.persistence.Id;
import jakarta.persistence.Table;

import java.time.Instant;
import java.util.UUID;

/** A benchmark stage attempt waiting for, or leased by, a device runner. */
@Entity
@Table(name = "benchmark_tasks")
class BenchmarkTaskEntity {
    enum State { QUEUED, LEASED, DONE }

    @Id
    UUID id;
    @Column(name = "job_id")
    UUID jobId;
    String tenant;
    /** The DeviceMessages.BenchmarkTask the runner receives, as JSON. */
    String task;
    String selector;
    @Enumerated(EnumType.STRING)
    State state;
    @Column(name = "device_id")
    UUID deviceId;
    @Column(name = "lease_until")
    Instant leaseUntil;
    @Column(name = "created_at")
    Instant createdAt;
    /** Runners that lost the lease (stopped heartbeating) while running it. */
    @Column(name = "lease_losses")
    int leaseLosses;
}
