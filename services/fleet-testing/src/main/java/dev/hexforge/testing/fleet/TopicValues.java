package dev.hexforge.testing.fleet;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
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
     * passed, then for {@code grace} more, so that a value sent twice shows as an extra one.
     */
    public static List<String> read(String bootstrap, String topic, int count, Duration within, Duration grace) {
        List<String> got = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                ConsumerConfig.GROUP_ID_CONFIG, "topic-values-" + UUID.randomUUID(),
                ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest",
                ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName(),
                ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName()))) {
            consumer.subscribe(List.of(topic));
            long deadline = System.nanoTime() + within.toNanos();
            while (got.size() < count && System.nanoTime() < deadline) {
                consumer.poll(Duration.ofMillis(200)).forEach(r -> got.add(r.value()));
            }
            consumer.poll(grace).forEach(r -> got.add(r.value()));
        }
        return got;
    }
}
