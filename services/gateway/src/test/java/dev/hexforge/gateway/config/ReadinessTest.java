package dev.hexforge.gateway.config;

import com.zaxxer.hikari.HikariDataSource;
import dev.hexforge.infra.EmbeddedInfra;
import dev.hexforge.infra.EmbeddedS3;
import dev.hexforge.store.ArtifactStore;
import dev.hexforge.testing.fleet.FleetInfra;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Readiness against real dependencies: running, stopped and restarted, or accepting connections and never answering. */
@org.junit.jupiter.api.Tag("fleet")
@ExtendWith(FleetInfra.class)
class ReadinessTest {
    @TempDir
    Path dir;

    @Test
    void readyWhenTheDatabaseTheBrokerAndTheObjectStoreAllAnswer(FleetInfra.Endpoints infra) {
        try (HikariDataSource db = database(infra.jdbcUrl(), infra.dbUser(), infra.dbPassword());
             Readiness r = new Readiness(db, Map.of("bootstrap.servers", infra.kafka()), store(infra))) {
            Readiness.Report report = r.check();
            assertEquals(Map.of("database", "up", "broker", "up", "objectStore", "up"), report.dependencies());
            assertTrue(report.ready());
        }
    }

    @Test
    void anObjectStoreThatStopsIsDownWithinTwoSecondsAndUpAgainWhenItIsBack(FleetInfra.Endpoints infra) {
        int port = EmbeddedInfra.Ports.restartable(); // stopped and started again on it
        EmbeddedS3 s3 = EmbeddedS3.start(dir.resolve("s3"), port, "k", "secret-key");
        try (HikariDataSource db = database(infra.jdbcUrl(), infra.dbUser(), infra.dbPassword());
             Readiness r = new Readiness(db, Map.of("bootstrap.servers", infra.kafka()), new ArtifactStore(s3.endpoint(), "k", "secret-key"))) {
            assertTrue(r.check().ready());
            s3.close();
            Readiness.Report down = awaitChange(r, "objectStore", "down");
            assertFalse(down.ready());
            assertEquals("up", down.dependencies().get("database"));
            assertEquals("up", down.dependencies().get("broker"));
            s3 = EmbeddedS3.start(dir.resolve("s3"), port, "k", "secret-key");
            assertTrue(awaitChange(r, "objectStore", "up").ready());
        } finally {
            s3.close();
        }
    }

    @Test
    void aDatabaseAndABrokerThatAcceptConnectionsButNeverAnswerAreDownWithinTwoAndAHalfSeconds(FleetInfra.Endpoints infra) throws IOException {
        try (Silent silent = new Silent()) {
            String address = "127.0.0.1:" + silent.port();
            try (HikariDataSource db = database("jdbc:postgresql://" + address + "/hexforge", "u", "p");
                 Readiness r = new Readiness(db, Map.of("bootstrap.servers", address), store(infra))) {
                long t0 = System.nanoTime();
                Readiness.Report report = r.check();
                long ms = (System.nanoTime() - t0) / 1_000_000;
                assertEquals(Map.of("database", "down", "broker", "down", "objectStore", "up"), report.dependencies());
                assertFalse(report.ready());
                assertTrue(ms < 2500, "a readiness check took " + ms + " ms");
            }
        }
    }

    private static Readiness.Report awaitChange(Readiness r, String dependency, String state) {
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (true) {
            long t0 = System.nanoTime();
            Readiness.Report report = r.check();
            assertTrue(System.nanoTime() - t0 < 2_500_000_000L, "a readiness check took longer than 2.5 s");
            if (report.dependencies().get(dependency).equals(state)) {
                return report;
            }
            assertTrue(System.nanoTime() < deadline, dependency + " still not " + state + " after 10 s: " + report);
            sleep(200);
        }
    }

    private static HikariDataSource database(String url, String user, String password) {
        HikariDataSource db = new HikariDataSource();
        db.setJdbcUrl(url);
        db.setUsername(user);
        db.setPassword(password);
        db.setConnectionTimeout(1000);   // as the gateway's application.properties sets it
        db.setInitializationFailTimeout(-1);
        db.setMaximumPoolSize(2);
        return db;
    }

    private static ArtifactStore store(FleetInfra.Endpoints infra) {
        return new ArtifactStore(infra.s3Endpoint(), infra.s3AccessKey(), infra.s3SecretKey());
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /** Accepts every connection and never writes a byte. */
    private static final class Silent implements AutoCloseable {
        private final ServerSocket server = new ServerSocket(0);
        private final List<Socket> held = new ArrayList<>();
        private final Thread acceptor;

        Silent() throws IOException {
            acceptor = new Thread(() -> {
                while (!server.isClosed()) {
                    try {
                        Socket s = server.accept();
                        synchronized (held) {
                            held.add(s);
                        }
                    } catch (IOException closed) {
                        return;
                    }
                }
            });
            acceptor.setDaemon(true);
            acceptor.start();
        }

        int port() {
            return server.getLocalPort();
        }

        @Override
        public void close() throws IOException {
            server.close();
            synchronized (held) {
                for (Socket s : held) {
                    s.close();
                }
            }
        }
    }
}
