package dev.hexforge.gateway;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.hexforge.gateway.auth.TokenService;
import dev.hexforge.infra.EmbeddedInfra;
import dev.hexforge.infra.EmbeddedS3;
import dev.hexforge.store.ArtifactStore;
import dev.hexforge.testing.fleet.FleetInfra;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.util.HexFormat;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The object store away during uploads, on a gateway with an S3 server of its own that the test stops and starts:
 * a fast 503 with Retry-After, nothing half-visible, what was stored before intact, and the same upload accepted once
 * the store is back.
 */
@org.junit.jupiter.api.Tag("fleet")
@ExtendWith(FleetInfra.class)
class ObjectStoreOutageTest {
    private static final HttpClient HTTP = HttpClient.newHttpClient();
    private static final ObjectMapper JSON = new ObjectMapper();
    private static Path dir;
    private static int port;
    private static EmbeddedS3 s3;
    private static ConfigurableApplicationContext gateway;
    private static String base;
    private static String token;

    @BeforeAll
    static void start(FleetInfra.Endpoints infra) throws Exception {
        dir = Files.createTempDirectory("hexforge-s3-outage");
        port = EmbeddedInfra.Ports.restartable(); // stopped and started again on it
        s3 = EmbeddedS3.start(dir.resolve("s3"), port, "outage", "outage-secret");
        gateway = new SpringApplicationBuilder(GatewayApplication.class).run("--server.port=0",
                "--spring.kafka.bootstrap-servers=" + infra.kafka(), "--spring.datasource.url=" + infra.jdbcUrl(),
                "--spring.datasource.username=" + infra.dbUser(), "--spring.datasource.password=" + infra.dbPassword(),
                "--hexforge.s3.endpoint=" + s3.endpoint(), "--hexforge.s3.access-key=outage", "--hexforge.s3.secret-key=outage-secret",
                "--hexforge.artifact-service.url=http://127.0.0.1:1");
        base = "http://127.0.0.1:" + gateway.getEnvironment().getProperty("local.server.port") + "/api/v1/uploads";
        token = gateway.getBean(TokenService.class).create("outage", "test");
    }

    @AfterAll
    static void stop() {
        if (gateway != null) {
            gateway.close();
        }
        if (s3 != null) {
            s3.close();
        }
    }

    private static HttpResponse<String> upload(String name, byte[] body) throws Exception {
        return HTTP.send(HttpRequest.newBuilder(URI.create(base + "?name=" + name)).timeout(Duration.ofSeconds(30))
                .header("Authorization", "Bearer " + token).POST(HttpRequest.BodyPublishers.ofByteArray(body)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private static JsonNode get(String url) throws Exception {
        HttpResponse<String> r = HTTP.send(HttpRequest.newBuilder(URI.create(url)).header("Authorization", "Bearer " + token).build(),
                HttpResponse.BodyHandlers.ofString());
        assertEquals(200, r.statusCode(), r.body());
        return JSON.readTree(r.body());
    }

    @Test
    void anUploadWhileTheObjectStoreIsAwayIsA503WithRetryAfterAndLeavesNothingBehind() throws Exception {
        byte[] first = "{\"text\": \"kept\"}\n".getBytes();
        HttpResponse<String> stored = upload("first.jsonl", first);
        assertEquals(201, stored.statusCode(), stored.body());
        String firstId = JSON.readTree(stored.body()).path("id").asText();

        s3.close();
        byte[] second = "{\"text\": \"sent while the store was away\"}\n".getBytes();
        long t0 = System.nanoTime();
        HttpResponse<String> away = upload("second.jsonl", second);
        long ms = (System.nanoTime() - t0) / 1_000_000;
        assertEquals(503, away.statusCode(), away.body());
        assertEquals("5", away.headers().firstValue("Retry-After").orElse(null), "clients are told when to try again");
        assertTrue(away.body().contains("object storage"), away.body());
        assertTrue(ms < 5000, "the refusal took " + ms + " ms");
        JsonNode listed = get(base).path("uploads");
        assertEquals(1, listed.size(), "only the upload made before the outage: " + listed);
        assertEquals(firstId, listed.get(0).path("id").asText());

        s3 = EmbeddedS3.start(dir.resolve("s3"), port, "outage", "outage-secret");
        HttpResponse<String> again = upload("second.jsonl", second);
        assertEquals(201, again.statusCode(), "the same upload once the store is back: " + again.body());
        JsonNode secondRow = JSON.readTree(again.body());
        assertEquals(HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(second)), secondRow.path("sha256").asText());
        assertEquals(2, get(base).path("total").asInt());
        ArtifactStore store = new ArtifactStore(s3.endpoint(), "outage", "outage-secret");
        assertArrayEquals(first, store.getBytes(ArtifactStore.uploadKey(firstId)), "what was stored before the outage is intact");
        assertArrayEquals(second, store.getBytes(ArtifactStore.uploadKey(secondRow.path("id").asText())));
    }
}
