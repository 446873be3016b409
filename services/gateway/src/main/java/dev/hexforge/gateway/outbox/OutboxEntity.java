package dev.hexforge.gateway.outbox;

import jakarta.persistence.Column;
import jakarta.persistence.Entity;
import jakarta.persistence.GeneratedValue;
import jakarta.persistence.GenerationType;
import jakarta.persistence.Id;
import jakarta.persistence.Table;

import java.time.Instant;

/** A message written in the same transaction as the state change it announces; the relay sends it to Kafka. */
@Entity
@Table(name = "outbox")
public class OutboxEntity {
    @Id
    @GeneratedValue(strategy = GenerationType.IDENTITY)
    public Long id;
    @Column(nullable = false)
    public String topic;
    @Column(name = "message_key", nullable = false)
    public String messageKey;
    @Column(nullable = false, columnDefinition = "text")
    public String payload;
    @Column(name = "created_at", nullable = false)
    public Instant createdAt;
    @Column(name = "sent_at")
    public Instant sentAt;
}
