package dev.hexforge.infra;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.util.Random;

/**
 * Kafka, PostgreSQL and S3 started together under one home folder ({@code ~/.hexforge} in standalone mode), state
 * kept across restarts. Stops in reverse order.
 */
public final class EmbeddedInfra implements AutoCloseable {
    /** Fixed ports of standalone mode; tests pass free ones. */
    public record Ports(int kafka, int kafkaController, int postgres, int s3) {
        public static Ports standalone() {
            return new Ports(19092, 19093, 15432, 19000);
        }

        /** Four ports free right now (for tests and throw-away fleets). */
        public static Ports anyFree() {
            return new Ports(free(), free(), free(), free());
        }

        /**
         * A free port for a server a test stops and starts again on the same port: below the ephemeral range (32768 and
         * up on Linux), because while the server is down a client reconnecting to that port from an ephemeral port can
         * be given the same port and connect to itself (TCP simultaneous open), and then holds the port the server
         * needs.
         */
        public static int restartable() {
            Random random = new Random();
            for (int tries = 0; tries < 100; tries++) {
                int port = 20_000 + random.nextInt(12_000);
                try (ServerSocket s = new ServerSocket(port, 1, InetAddress.getLoopbackAddress())) {
                    return port;
                } catch (IOException taken) {
                    // try another
                }
            }
            throw new IllegalStateException("no free port between 20000 and 32000");
        }

        /** A port the OS reports free right now. */
        public static int free() {
            try (ServerSocket s = new ServerSocket(0)) {
                return s.getLocalPort();
            } catch (IOException e) {
                throw new UncheckedIOException("no free port: " + e.getMessage(), e);
            }
        }
    }

    public static final String S3_ACCESS_KEY = "hexforge";

    private final EmbeddedKafka kafka;
    private final EmbeddedPostgres postgres;
    private final EmbeddedS3 s3;

    private EmbeddedInfra(EmbeddedKafka kafka, EmbeddedPostgres postgres, EmbeddedS3 s3) {
        this.kafka = kafka;
        this.postgres = postgres;
        this.s3 = s3;
    }

    /** @param s3Secret the S3 secret key (standalone mode generates one on first start and keeps it) */
    public static EmbeddedInfra start(Path home, Ports ports, String s3Secret) {
        EmbeddedPostgres pg = EmbeddedPostgres.start(home.resolve("postgres"), ports.postgres());
        EmbeddedS3 s3 = null;
        try {
            s3 = EmbeddedS3.start(home.resolve("objects"), ports.s3(), S3_ACCESS_KEY, s3Secret);
            EmbeddedKafka kafka = EmbeddedKafka.start(home.resolve("kafka"), ports.kafka(), ports.kafkaController());
            return new EmbeddedInfra(kafka, pg, s3);
        } catch (RuntimeException e) {
            if (s3 != null) {
                s3.close();
            }
            pg.close();
            throw e;
        }
    }

    public EmbeddedKafka kafka() {
        return kafka;
    }

    public EmbeddedPostgres postgres() {
        return postgres;
    }

    public EmbeddedS3 s3() {
        return s3;
    }

    @Override
    public void close() {
        try {
            kafka.close();
        } finally {
            try {
                s3.close();
            } finally {
                postgres.close();
            }
        }
    }
}
