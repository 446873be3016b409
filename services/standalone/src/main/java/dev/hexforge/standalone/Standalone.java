package dev.hexforge.standalone;

import dev.hexforge.exportservice.ExportServiceApplication;
import dev.hexforge.gateway.GatewayApplication;
import dev.hexforge.infra.EmbeddedInfra;
import dev.hexforge.quantizeservice.QuantizeServiceApplication;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.util.HexFormat;

/**
 * The whole fleet in one JVM: embedded Kafka, PostgreSQL and S3 on fixed ports, the quantize and export services
 * and the gateway.
 * State lives under the home folder ({@code ~/.hexforge}) and survives restarts; the S3 secret is generated on the
 * first start and kept there (mode 600).
 */
public final class Standalone implements AutoCloseable {
    public static final int GATEWAY_PORT = 8080;
    private final EmbeddedInfra infra;
    private final ConfigurableApplicationContext exportService;
    private final ConfigurableApplicationContext quantizeService;
    private final ConfigurableApplicationContext gateway;
    private final String s3Secret;

    private Standalone(EmbeddedInfra infra, ConfigurableApplicationContext exportService,
                       ConfigurableApplicationContext quantizeService, ConfigurableApplicationContext gateway, String s3Secret) {
        this.infra = infra;
        this.exportService = exportService;
        this.quantizeService = quantizeService;
        this.gateway = gateway;
        this.s3Secret = s3Secret;
    }

    public static Path home() {
        String env = System.getenv("HEXFORGE_STATE");
        return env != null ? Path.of(env) : Path.of(System.getProperty("user.home"), ".hexforge");
    }

    public static String s3Secret(Path home) {
        Path file = home.resolve("secrets/s3-secret");
        try {
            if (Files.isRegularFile(file)) {
                return Files.readString(file).strip();
            }
            Files.createDirectories(file.getParent());
            byte[] b = new byte[24];
            new SecureRandom().nextBytes(b);
            String secret = HexFormat.of().formatHex(b);
            Files.writeString(file, secret);
            try {
                Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-------"));
            } catch (UnsupportedOperationException ignored) {
                // not a POSIX file system
            }
            return secret;
        } catch (IOException e) {
            throw new UncheckedIOException("reading or creating " + file + ": " + e.getMessage(), e);
        }
    }

    /** Where the first API token (tenant "default") is written on the first start. */
    public static Path tokenFile(Path home) {
        return home.resolve("secrets/api-token");
    }

    public static Standalone start(Path home, int gatewayPort) {
        return start(home, EmbeddedInfra.Ports.standalone(), gatewayPort);
    }

    /** With other ports than standalone mode's fixed ones (tests; 0 for the gateway picks a free port). */
    public static Standalone start(Path home, EmbeddedInfra.Ports ports, int gatewayPort) {
        String secret = s3Secret(home);
        EmbeddedInfra infra = EmbeddedInfra.start(home, ports, secret);
        String kafka = "--spring.kafka.bootstrap-servers=" + infra.kafka().bootstrapServers();
        ConfigurableApplicationContext export = null;
        ConfigurableApplicationContext quantize = null;
        try {
            String s3 = "--hexforge.s3.endpoint=" + infra.s3().endpoint();
            export = ExportServiceApplication.start(kafka, s3, "--hexforge.s3.secret-key=" + secret,
                    "--hexforge.work-dir=" + home.resolve("work/export"), "--spring.main.banner-mode=off");
            quantize = QuantizeServiceApplication.start(kafka, s3, "--hexforge.s3.secret-key=" + secret,
                    "--hexforge.work-dir=" + home.resolve("work/quantize"), "--spring.main.banner-mode=off");
            ConfigurableApplicationContext gateway = new SpringApplicationBuilder(GatewayApplication.class).run(kafka,
                    "--hexforge.stages=quantize,export", "--hexforge.bootstrap-token-file=" + tokenFile(home),
                    "--server.port=" + gatewayPort, "--spring.datasource.url=" + infra.postgres().jdbcUrl(),
                    "--spring.datasource.username=" + infra.postgres().user(),
                    "--spring.datasource.password=" + infra.postgres().password(), "--spring.main.banner-mode=off");
            return new Standalone(infra, export, quantize, gateway, secret);
        } catch (RuntimeException e) {
            if (export != null) {
                export.close();
            }
            if (quantize != null) {
                quantize.close();
            }
            infra.close();
            throw e;
        }
    }

    public String gatewayUrl() {
        return "http://127.0.0.1:" + gateway.getEnvironment().getProperty("local.server.port");
    }

    public EmbeddedInfra infra() {
        return infra;
    }

    public String s3Secret() {
        return s3Secret;
    }

    @Override
    public void close() {
        try {
            gateway.close();
            exportService.close();
            quantizeService.close();
        } finally {
            infra.close();
        }
    }
}
