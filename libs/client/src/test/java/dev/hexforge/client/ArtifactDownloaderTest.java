package dev.hexforge.client;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import dev.hexforge.signing.FolderHasher;
import dev.hexforge.signing.Keys;
import dev.hexforge.signing.ModelSignature;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyPair;
import java.time.Duration;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The downloader against a gateway and a storage that are away for a while (a JDK HTTP server standing in for both,
 * answering as the real ones do: the artifact's detail, a 302 to a URL per file, the file's bytes).
 */
class ArtifactDownloaderTest {
    @TempDir
    Path dir;
    private HttpServer server;
    private GatewayClient gateway;
    private final KeyPair key = Keys.generate();
    private byte[] weights;
    private Path bundle;
    /** Requests still to refuse: the gateway's with 503, the storage's with 503 (both away). */
    private final AtomicInteger gatewayAway = new AtomicInteger();
    private final AtomicInteger storageAway = new AtomicInteger();
    private final AtomicInteger refused = new AtomicInteger();

    @BeforeEach
    void serve() throws IOException {
        weights = new byte[300_000];
        new Random(7).nextBytes(weights);
        bundle = Files.createDirectories(dir.resolve("bundle"));
        Files.write(bundle.resolve("weights.bin"), weights);
        ModelSignature.sign(bundle, key.getPrivate(), bundle.resolve(ModelSignature.DEFAULT_SIGNATURE), List.of());
        server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        String base = "http://127.0.0.1:" + server.getAddress().getPort();
        server.createContext("/api/v1/artifacts/", ex -> {
            if (gatewayAway.getAndDecrement() > 0) {
                refused.incrementAndGet();
                answer(ex, 503, "{\"error\": \"the artifact service is not reachable\"}");
            } else if (!ex.getRequestURI().getPath().startsWith("/api/v1/artifacts/A")) {
                answer(ex, 404, "{\"error\": \"no such artifact\"}");
            } else if (ex.getRequestURI().getPath().endsWith("/download")) {
                String path = ex.getRequestURI().getQuery().substring("path=".length());
                ex.getResponseHeaders().add("Location", base + "/store/" + path);
                answer(ex, 302, "{\"url\": \"" + base + "/store/" + path + "\"}");
            } else {
                answer(ex, 200, "{\"files\": [{\"path\": \"weights.bin\", \"size\": " + weights.length + ", \"sha256\": \""
                        + FolderHasher.sha256(bundle.resolve("weights.bin")) + "\"}], \"signature\": {\"keyHint\": \""
                        + Keys.hint(key.getPublic()) + "\"}}");
            }
        });
        server.createContext("/store/", ex -> {
            if (storageAway.getAndDecrement() > 0) {
                refused.incrementAndGet();
                answer(ex, 503, "<Error><Code>ServiceUnavailable</Code></Error>");
                return;
            }
            byte[] body = Files.readAllBytes(bundle.resolve(ex.getRequestURI().getPath().substring("/store/".length())));
            ex.sendResponseHeaders(200, body.length);
            ex.getResponseBody().write(body);
            ex.close();
        });
        server.start();
        gateway = new GatewayClient(base, "token");
    }

    @AfterEach
    void stop() {
        server.stop(0);
    }

    private static void answer(HttpExchange ex, int status, String body) throws IOException {
        byte[] b = body.getBytes(StandardCharsets.UTF_8);
        ex.sendResponseHeaders(status, b.length);
        ex.getResponseBody().write(b);
        ex.close();
    }

    @Test
    void aGatewayAndAStorageAwayForAWhileAreWaitedOut() throws Exception {
        gatewayAway.set(2);
        storageAway.set(2);
        Path out = dir.resolve("out");
        ArtifactDownloader.Result got = new ArtifactDownloader(gateway, Duration.ofSeconds(30))
                .downloadPinned("A", out, List.of(key.getPublic()), (p, d, n) -> { });
        assertEquals(4, refused.get(), "two 503s from each");
        assertArrayEquals(weights, Files.readAllBytes(out.resolve("weights.bin")));
        assertEquals(Keys.hint(key.getPublic()), got.keyHint());
        assertFalse(Files.exists(ArtifactDownloader.staging(out)));
    }

    @Test
    void anOutageLongerThanThePatienceFailsNamingItAndMovesNothing() {
        storageAway.set(Integer.MAX_VALUE);
        Path out = dir.resolve("out");
        long t0 = System.nanoTime();
        ArtifactDownloader.DownloadException e = assertThrows(ArtifactDownloader.DownloadException.class,
                () -> new ArtifactDownloader(gateway, Duration.ofSeconds(2)).download("A", out, key.getPublic(), (p, d, n) -> { }));
        long ms = (System.nanoTime() - t0) / 1_000_000;
        assertTrue(e.worthRetrying(), "a later run may succeed");
        assertTrue(e.getMessage().contains("storage answered 503") && e.getMessage().contains("still so after"), e.getMessage());
        assertTrue(ms >= 1_000 && ms < 10_000, "it waited about its patience: " + ms + " ms");
        assertFalse(Files.exists(out), "nothing in place");
    }

    @Test
    void aRefusalIsNotWaitedFor() {
        long t0 = System.nanoTime();
        GatewayClient.GatewayException e = assertThrows(GatewayClient.GatewayException.class,
                () -> new ArtifactDownloader(gateway, Duration.ofSeconds(30)).download("B", dir.resolve("out"), key.getPublic(), (p, d, n) -> { }));
        assertEquals(404, e.status());
        assertFalse(e.worthRetrying());
        assertTrue((System.nanoTime() - t0) / 1_000_000 < 2_000, "a 404 is final");
    }

    @Test
    void aGatewayThatIsNotThereIsStatusZeroAndWorthRetrying() {
        int port = server.getAddress().getPort();
        server.stop(0);
        GatewayClient.GatewayException e = assertThrows(GatewayClient.GatewayException.class,
                () -> new GatewayClient("http://127.0.0.1:" + port, "t").ok(new GatewayClient("http://127.0.0.1:" + port, "t")
                        .send("GET", "/api/v1/jobs", null, null)));
        assertEquals(0, e.status());
        assertTrue(e.worthRetrying() && e.getMessage().contains("not reachable"), e.getMessage());
    }
}
