package dev.hexforge.testing.fleet;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.serialization.StringDeserializer;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/** What a topic holds, for tests that check what reached the broker. */
public final class TopicValues {
    private TopicValues() {
    }

    /**
     * The values on {@code topic} from its start, in order: read until {@code count} have arrived or {@code within} has
     * passed, then for {@code grace} more, so that a value sent twice shows as an extra one. The partitions are
     * assigned and read from their first offset (no consumer group: no rebalance to wait for, and no offset reset
     * that could start anywhere but the beginning), once the topic exists.
     */
    public static List<String> read(String bootstrap, String topic, int count, Duration within, Duration grace) {
        List<String> got = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                ConsumerConfig.GROUP_ID_CONFIG, "topic-values-" + UUID.randomUUID(),
                ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false",
                ConsumerConfig.ALLOW_AUTO_CREATE_TOPICS_CONFIG, "false",
                ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest",
                ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName(),
                ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName()))) {
            long deadline = System.nanoTime() + within.toNanos();
            List<TopicPartition> partitions = List.of();
            while (partitions.isEmpty() && System.nanoTime() < deadline) {
                try {
                    partitions = consumer.partitionsFor(topic, Duration.ofSeconds(5)).stream()
                            .map(p -> new TopicPartition(topic, p.partition())).toList();
                } catch (TimeoutException notYet) {
                    partitions = List.of();
                }
                if (partitions.isEmpty()) {
                    sleep();
                }
            }
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            while (got.size() < count && System.nanoTime() < deadline) {
                consumer.poll(Duration.ofMillis(200)).forEach(r -> got.add(r.value()));
            }
            consumer.poll(grace).forEach(r -> got.add(r.value()));
        }
        return got;
    }

    private static void sleep() {
        try {
            Thread.sleep(200);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while waiting for a topic", e);
        }
    }
}
