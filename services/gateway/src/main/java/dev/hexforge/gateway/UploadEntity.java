package dev.hexforge.gateway;

import jakarta.persistence.Column;
import jakarta.persistence.Entity;
import jakarta.persistence.Id;
import jakarta.persistence.Table;

import java.time.Instant;
import java.util.UUID;

/** A model archive a tenant uploaded: where it is stored, its digest, and what it unpacks to. */
@Entity
@Table(name = "uploads")
class UploadEntity {
    @Id
    UUID id;
    String tenant;
    String name;
    long size;
    String sha256;
    @Column(name = "object_key")
    String objectKey;
    String format;
    int files;
    @Column(name = "unpacked_size")
    long unpackedSize;
    @Column(name = "created_at")
    Instant createdAt;
}
