package dev.hexforge.testing.fleet;

import dev.hexforge.infra.EmbeddedInfra;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.ParameterContext;
import org.junit.jupiter.api.extension.ParameterResolver;
import org.testcontainers.DockerClientFactory;
import org.testcontainers.containers.MinIOContainer;
import org.testcontainers.containers.PostgreSQLContainer;
import org.testcontainers.kafka.KafkaContainer;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;

/**
 * Real Kafka, PostgreSQL and S3 for a test class: containers (apache/kafka in KRaft mode, postgres, MinIO) where a
 * Docker engine answers, the embedded servers (KRaft broker, zonky PostgreSQL, s3proxy) otherwise — the same tests run
 * in both places. One set per test JVM, shared by every class that uses the extension, stopped when the JVM's tests end.
 * Use: {@code @ExtendWith(FleetInfra.class)} and a {@link Endpoints} parameter on a {@code @BeforeAll} method.
 */
public final class FleetInfra implements BeforeAllCallback, ParameterResolver {
    private static final ExtensionContext.Namespace NS = ExtensionContext.Namespace.create(FleetInfra.class);

    /** Where the services are and how to log in; {@code kind} says which of the two it is. */
    public record Endpoints(String kind, String kafka, String jdbcUrl, String dbUser, String dbPassword, String s3Endpoint,
                            String s3AccessKey, String s3SecretKey) {
    }

    /**
     * Whether a Docker engine answers (Testcontainers' own probe), asked only where one could be: a DOCKER_HOST, a
     * Testcontainers configuration or a Docker socket (so machines without Docker get no probe and no error log).
     */
    public static boolean dockerAvailable() {
        boolean candidate = System.getenv("DOCKER_HOST") != null || Files.exists(Path.of("/var/run/docker.sock"))
                || Files.exists(Path.of(System.getProperty("user.home"), ".testcontainers.properties"));
        if (!candidate) {
            return false;
        }
        try {
            return DockerClientFactory.instance().isDockerAvailable();
        } catch (RuntimeException | LinkageError e) {
            return false;
        }
    }

    @Override
    public void beforeAll(ExtensionContext context) {
        endpoints(context);
    }

    @Override
    public boolean supportsParameter(ParameterContext p, ExtensionContext context) {
        return p.getParameter().getType() == Endpoints.class;
    }

    @Override
    public Object resolveParameter(ParameterContext p, ExtensionContext context) {
        return endpoints(context);
    }

    private static Endpoints endpoints(ExtensionContext context) {
        return context.getRoot().getStore(NS).getOrComputeIfAbsent("infra", k -> dockerAvailable() ? new Containers() : new Embedded(),
                Running.class).endpoints();
    }

    /** A started set of services, closed by JUnit with the root context. */
    private interface Running extends ExtensionContext.Store.CloseableResource {
        Endpoints endpoints();
    }

    private static final class Embedded implements Running {
        private final EmbeddedInfra infra;
        private final Path dir;

        Embedded() {
            try {
                dir = Files.createTempDirectory("hexforge-fleet-infra");
                infra = EmbeddedInfra.start(dir, EmbeddedInfra.Ports.anyFree(), "s3-secret");
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }

        @Override
        public Endpoints endpoints() {
            return new Endpoints("embedded", infra.kafka().bootstrapServers(), infra.postgres().jdbcUrl(), infra.postgres().user(),
                    infra.postgres().password(), infra.s3().endpoint(), infra.s3().accessKey(), infra.s3().secretKey());
        }

        @Override
        public void close() {
            infra.close();
            try (var files = Files.walk(dir)) {
                files.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
            } catch (IOException ignored) {
                // a temporary folder: the OS cleans up what is left
            }
        }
    }

    private static final class Containers implements Running {
        private final KafkaContainer kafka = new KafkaContainer("apache/kafka:4.1.0");
        private final PostgreSQLContainer<?> postgres = new PostgreSQLContainer<>("postgres:17-alpine");
        private final MinIOContainer minio = new MinIOContainer("minio/minio:latest");

        Containers() {
            kafka.start();
            postgres.start();
            minio.start();
        }

        @Override
        public Endpoints endpoints() {
            return new Endpoints("containers", kafka.getBootstrapServers(), postgres.getJdbcUrl(), postgres.getUsername(),
                    postgres.getPassword(), minio.getS3URL(), minio.getUserName(), minio.getPassword());
        }

        @Override
        public void close() {
            minio.stop();
            postgres.stop();
            kafka.stop();
        }
    }

}
