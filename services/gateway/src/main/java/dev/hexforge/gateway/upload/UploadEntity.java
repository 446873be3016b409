package dev.hexforge.gateway.upload;

import jakarta.persistence.Column;
import jakarta.persistence.Entity;
import jakarta.persistence.Id;
import jakarta.persistence.Table;

import java.time.Instant;
import java.util.UUID;

/** A model archive a tenant uploaded: where it is stored, its digest, and what it unpacks to. */
@Entity
@Table(name = "uploads")
public class UploadEntity {
    @Id
    public UUID id;
    String tenant;
    public String name;
    public long size;
    public String sha256;
    @Column(name = "object_key")
    public String objectKey;
    public String format;
    int files;
    @Column(name = "unpacked_size")
    long unpackedSize;
    @Column(name = "created_at")
    Instant createdAt;
}
