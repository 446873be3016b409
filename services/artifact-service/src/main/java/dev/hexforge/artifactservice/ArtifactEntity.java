package dev.hexforge.artifactservice;

import jakarta.persistence.Column;
import jakarta.persistence.Entity;
import jakarta.persistence.Id;
import jakarta.persistence.Table;

import java.time.Instant;
import java.util.UUID;

/** A catalogued stage output: who owns it, which attempt made it, the stored folder and its signature. */
@Entity
@Table(name = "artifacts")
class ArtifactEntity {
    @Id
    UUID id;
    String tenant;
    @Column(name = "job_id")
    UUID jobId;
    @Column(name = "attempt_id")
    UUID attemptId;
    String stage;
    String kind;
    /** Digest of the stored folder's manifest (its name in storage). */
    String sha256;
    long size;
    @Column(name = "file_count")
    int fileCount;
    /** The OMS root digest of the files, as the signature states it. */
    @Column(name = "root_digest")
    String rootDigest;
    @Column(name = "signature_key")
    String signatureKey;
    @Column(name = "key_hint")
    String keyHint;
    boolean provenance;
    @Column(name = "created_at")
    Instant createdAt;
}
