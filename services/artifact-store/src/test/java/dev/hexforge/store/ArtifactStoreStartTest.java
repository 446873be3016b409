package dev.hexforge.store;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.hexforge.infra.EmbeddedInfra;
import dev.hexforge.infra.EmbeddedS3;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The store's start against a fresh S3 server: the fleet's services start together and all find the bucket. */
@org.junit.jupiter.api.Tag("fleet")
class ArtifactStoreStartTest {
    @TempDir
    Path dir;

    @Test
    void servicesStartingTogetherOnAFreshServerAllGetTheBucket() throws Exception {
        int services = 6;
        ExecutorService pool = Executors.newFixedThreadPool(services);
        try {
            for (int round = 0; round < 3; round++) { // each round a fresh server: the bucket does not exist yet
                try (EmbeddedS3 s3 = EmbeddedS3.start(dir.resolve("s3-" + round), EmbeddedInfra.Ports.free(), "hexforge", "secret-key-123")) {
                    CyclicBarrier together = new CyclicBarrier(services);
                    List<Future<ArtifactStore>> started = new ArrayList<>();
                    for (int i = 0; i < services; i++) {
                        started.add(pool.submit(() -> {
                            together.await();
                            return new ArtifactStore(s3.endpoint(), "hexforge", "secret-key-123");
                        }));
                    }
                    List<ArtifactStore> stores = new ArrayList<>();
                    for (Future<ArtifactStore> f : started) {
                        stores.add(f.get()); // a refusal here is a service that died at start-up
                    }
                    stores.get(0).putJson("attempts/a/completed.json", new ObjectMapper().createObjectNode().put("round", round));
                    assertEquals(round, new ObjectMapper().readTree(stores.get(services - 1).getBytes("attempts/a/completed.json")).path("round").asInt());
                }
            }
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void wrongCredentialsAreRefusedWithTheServerNamed() throws Exception {
        try (EmbeddedS3 s3 = EmbeddedS3.start(dir.resolve("s3"), EmbeddedInfra.Ports.free(), "hexforge", "secret-key-123")) {
            ArtifactStore.StoreException e = assertThrows(ArtifactStore.StoreException.class,
                    () -> new ArtifactStore(s3.endpoint(), "hexforge", "not-the-secret"));
            assertTrue(e.getMessage().contains(s3.endpoint()), e.getMessage());
        }
    }

}
