package dev.hexforge.infra;

import io.minio.BucketExistsArgs;
import io.minio.GetObjectArgs;
import io.minio.GetPresignedObjectUrlArgs;
import io.minio.MakeBucketArgs;
import io.minio.MinioClient;
import io.minio.PutObjectArgs;
import io.minio.StatObjectArgs;
import io.minio.http.Method;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayInputStream;
import java.io.InputStream;
import java.net.HttpURLConnection;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The three embedded servers, used for real through their ordinary clients. */
@org.junit.jupiter.api.Tag("fleet")
class EmbeddedInfraTest {
    @TempDir
    static Path home;
    static EmbeddedInfra infra;


    @BeforeAll
    static void start() throws Exception {
        infra = EmbeddedInfra.start(home, EmbeddedInfra.Ports.anyFree(), "test-secret-key");
    }

    @AfterAll
    static void stop() {
        if (infra != null) {
            infra.close();
        }
    }

    @Test
    void kafkaDeliversAMessage() {
        String topic = "hexforge.test.v1";
        try (KafkaProducer<String, String> p = new KafkaProducer<>(Map.of(
                ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, infra.kafka().bootstrapServers(),
                ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName(),
                ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName(),
                ProducerConfig.ACKS_CONFIG, "all"))) {
            p.send(new ProducerRecord<>(topic, "job-1", "hello")).get(60, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new AssertionError(e);
        }
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, infra.kafka().bootstrapServers(),
                ConsumerConfig.GROUP_ID_CONFIG, "test",
                ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest",
                ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName(),
                ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName()))) {
            c.subscribe(List.of(topic));
            long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
            while (System.nanoTime() < deadline) {
                ConsumerRecords<String, String> records = c.poll(Duration.ofMillis(500));
                if (!records.isEmpty()) {
                    assertEquals("hello", records.iterator().next().value());
                    return;
                }
            }
            throw new AssertionError("no message within 60 s");
        }
    }

    @Test
    void postgresRunsSql() throws Exception {
        try (Connection c = DriverManager.getConnection(infra.postgres().jdbcUrl(), infra.postgres().user(), infra.postgres().password());
             Statement s = c.createStatement()) {
            s.execute("CREATE TABLE IF NOT EXISTS probe (id int primary key, name text)");
            s.execute("INSERT INTO probe VALUES (1, 'x') ON CONFLICT DO NOTHING");
            ResultSet rs = s.executeQuery("SELECT current_database(), count(*) FROM probe");
            rs.next();
            assertEquals(EmbeddedPostgres.DATABASE, rs.getString(1));
            assertEquals(1, rs.getInt(2));
        }
    }

    @Test
    void s3StoresObjectsAndServesPresignedUrlsWithRealAuth() throws Exception {
        MinioClient client = MinioClient.builder().endpoint(infra.s3().endpoint())
                .credentials(infra.s3().accessKey(), infra.s3().secretKey()).build();
        if (!client.bucketExists(BucketExistsArgs.builder().bucket("artifacts").build())) {
            client.makeBucket(MakeBucketArgs.builder().bucket("artifacts").build());
        }
        byte[] data = "model bytes".getBytes(StandardCharsets.UTF_8);
        client.putObject(PutObjectArgs.builder().bucket("artifacts").object("a/b.bin")
                .stream(new ByteArrayInputStream(data), data.length, -1).build());
        assertEquals(data.length, client.statObject(StatObjectArgs.builder().bucket("artifacts").object("a/b.bin").build()).size());
        try (InputStream in = client.getObject(GetObjectArgs.builder().bucket("artifacts").object("a/b.bin").build())) {
            assertEquals("model bytes", new String(in.readAllBytes(), StandardCharsets.UTF_8));
        }
        String url = client.getPresignedObjectUrl(GetPresignedObjectUrlArgs.builder().method(Method.GET)
                .bucket("artifacts").object("a/b.bin").expiry(60).build());
        HttpURLConnection http = (HttpURLConnection) URI.create(url).toURL().openConnection();
        assertEquals(200, http.getResponseCode());
        assertEquals("model bytes", new String(http.getInputStream().readAllBytes(), StandardCharsets.UTF_8));
        MinioClient wrong = MinioClient.builder().endpoint(infra.s3().endpoint()).credentials("hexforge", "wrong-secret").build();
        assertThrows(Exception.class, () -> wrong.statObject(StatObjectArgs.builder().bucket("artifacts").object("a/b.bin").build()));
        assertTrue(home.resolve("objects").toFile().isDirectory());
    }
}
