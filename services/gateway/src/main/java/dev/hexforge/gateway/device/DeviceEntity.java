package dev.hexforge.gateway.device;

import jakarta.persistence.Column;
import jakarta.persistence.Entity;
import jakarta.persistence.Id;
import jakarta.persistence.Table;

import java.time.Instant;
import java.util.UUID;

/** A registered device runner of a tenant: its token's hash, what it offers, and when it was last heard from. */
@Entity
@Table(name = "devices")
public class DeviceEntity {
    @Id
    public UUID id;
    public String tenant;
    String name;
    @Column(name = "token_hash")
    String tokenHash;
    /** The runner's DeviceInfo as JSON, from its last registration. */
    String info;
    @Column(name = "last_seen")
    Instant lastSeen;
    @Column(name = "current_task")
    UUID currentTask;
    @Column(name = "created_at")
    Instant createdAt;
}
