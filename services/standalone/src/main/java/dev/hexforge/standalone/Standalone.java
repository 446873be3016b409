package dev.hexforge.standalone;

import dev.hexforge.artifactservice.ArtifactServiceApplication;
import dev.hexforge.client.GatewayClient;
import dev.hexforge.compileservice.CompileServiceApplication;
import dev.hexforge.devicerunner.DeviceProfile;
import dev.hexforge.devicerunner.RunnerLoop;
import dev.hexforge.exportservice.ExportServiceApplication;
import dev.hexforge.finetuneservice.FinetuneServiceApplication;
import dev.hexforge.gateway.GatewayApplication;
import dev.hexforge.gateway.device.DeviceService;
import dev.hexforge.gateway.job.SubmissionTimings;
import dev.hexforge.infra.EmbeddedInfra;
import dev.hexforge.io.Folders;
import dev.hexforge.quantizeservice.QuantizeServiceApplication;
import dev.hexforge.signing.Keys;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * The whole fleet in one JVM: embedded Kafka, PostgreSQL and S3 on fixed ports, the finetune, quantize, export,
 * compile and artifact services and the gateway.
 * State lives under the home folder ({@code ~/.hexforge}) and survives restarts; the S3 secret, the internal secret
 * between gateway and artifact service, and the signing key are generated on the first start and kept there (mode 600).
 */
public final class Standalone implements AutoCloseable {
    public static final int GATEWAY_PORT = 8080;
    /** The stages the stage services below run; the gateway accepts jobs of these only. */
    static final String STAGES = "finetune,merge,quantize,export,compile,sign,benchmark";
    private final EmbeddedInfra infra;
    private final List<ConfigurableApplicationContext> stageServices;
    private final ConfigurableApplicationContext gateway;
    private final String s3Secret;
    private RunnerLoop runner;

    private Standalone(EmbeddedInfra infra, List<ConfigurableApplicationContext> stageServices,
                       ConfigurableApplicationContext gateway, String s3Secret) {
        this.infra = infra;
        this.stageServices = List.copyOf(stageServices);
        this.gateway = gateway;
        this.s3Secret = s3Secret;
    }

    public static Path home() {
        return GatewayClient.stateFolder();
    }

    public static String s3Secret(Path home) {
        return secret(home.resolve("secrets/s3-secret"));
    }

    /** The signing key of the artifact service (a PKCS#8 PEM, created on the first start). */
    public static Path signingKey(Path home) {
        return home.resolve("secrets/signing-key.pem");
    }

    private static String secret(Path file) {
        try {
            if (Files.isRegularFile(file)) {
                return Files.readString(file).strip();
            }
            byte[] b = new byte[24];
            new SecureRandom().nextBytes(b);
            String secret = HexFormat.of().formatHex(b);
            Folders.writePrivate(file, secret);
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
        String[] inputs = inputPolicy(home);
        List<ConfigurableApplicationContext> services = new ArrayList<>();
        try {
            String s3 = "--hexforge.s3.endpoint=" + infra.s3().endpoint();
            Map<String, Function<String[], ConfigurableApplicationContext>> starters = new LinkedHashMap<>();
            starters.put("finetune", FinetuneServiceApplication::start);
            starters.put("quantize", QuantizeServiceApplication::start);
            starters.put("export", ExportServiceApplication::start);
            starters.put("compile", CompileServiceApplication::start);
            starters.forEach((name, start) -> services.add(start.apply(new String[]{kafka, s3,
                    "--hexforge.s3.secret-key=" + secret, "--hexforge.work-dir=" + home.resolve("work/" + name),
                    "--hexforge.qnn-sdk-root=" + qnnSdkRoot(),
                    "--spring.main.banner-mode=off", "--spring.main.log-startup-info=false", inputs[0], inputs[1]})));
            String internal = "--hexforge.internal-token=" + secret(home.resolve("secrets/internal-token"));
            String[] db = {"--spring.datasource.url=" + infra.postgres().jdbcUrl(),
                    "--spring.datasource.username=" + infra.postgres().user(),
                    "--spring.datasource.password=" + infra.postgres().password()};
            ConfigurableApplicationContext artifacts = ArtifactServiceApplication.start(kafka, s3, "--hexforge.s3.secret-key=" + secret,
                    "--hexforge.work-dir=" + home.resolve("work/artifacts"), "--hexforge.signing.key=" + signingKey(home),
                    "--hexforge.signing.generate=true", internal, "--server.port=0", "--server.address=127.0.0.1",
                    db[0], db[1], db[2], "--spring.main.banner-mode=off", "--spring.main.log-startup-info=false", inputs[0], inputs[1]);
            services.add(artifacts);
            ConfigurableApplicationContext gateway = new SpringApplicationBuilder(GatewayApplication.class).run(kafka,
                    "--hexforge.stages=" + STAGES, "--hexforge.compile-targets=" + compileTargets(),
                    "--hexforge.bootstrap-token-file=" + tokenFile(home),
                    // every stage runs in this JVM, so a job needing more than its heap is refused at submission
                    "--hexforge.worker-memory=" + Runtime.getRuntime().maxMemory() + "B",
                    "--hexforge.examples.model-path=" + StandaloneMain.hexforgeHome().resolve("fixtures/qwen2-tiny").toAbsolutePath().normalize(),
                    "--hexforge.examples.finetune-data=" + StandaloneMain.hexforgeHome().resolve("fixtures/lora-task/train.json").toAbsolutePath().normalize(),
                    "--server.port=" + gatewayPort, db[0], db[1], db[2], internal, s3, "--hexforge.s3.secret-key=" + secret,
                    "--hexforge.artifact-service.url=http://127.0.0.1:" + artifacts.getEnvironment().getProperty("local.server.port"),
                    "--spring.main.banner-mode=off", "--spring.main.log-startup-info=false", inputs[0], inputs[1]);
            Standalone fleet = new Standalone(infra, services, gateway, secret);
            try {
                fleet.startLocalRunner(home);
            } catch (IOException e) {
                fleet.close();
                throw new UncheckedIOException("starting the local device runner: " + e.getMessage(), e);
            }
            return fleet;
        } catch (RuntimeException e) {
            services.forEach(ConfigurableApplicationContext::close);
            infra.close();
            throw e;
        }
    }

    /** Where users put models and data the fleet may read by path ({@code model: /path}); uploads need no such folder. */
    public static Path modelsFolder(Path home) {
        return home.resolve("models");
    }

    /**
     * What a job may name by path in standalone mode: the bundled fixtures and the models folder, plus the folders in
     * {@code HEXFORGE_INPUT_ROOTS} (comma-separated); never the rest of the state folder (secrets, storage, work).
     */
    static String[] inputPolicy(Path home) {
        try {
            Files.createDirectories(modelsFolder(home));
        } catch (IOException e) {
            throw new UncheckedIOException("creating " + modelsFolder(home) + ": " + e.getMessage(), e);
        }
        String extra = System.getenv("HEXFORGE_INPUT_ROOTS");
        String roots = StandaloneMain.hexforgeHome().resolve("fixtures").toAbsolutePath().normalize() + "," + modelsFolder(home).toAbsolutePath()
                + (extra == null || extra.isBlank() ? "" : "," + extra);
        return new String[]{"--hexforge.input-roots=" + roots, "--hexforge.input-denied=" + home.toAbsolutePath().normalize()};
    }

    /** ort-qnn always; the QNN SDK targets when the compile service has an SDK. */
    static String compileTargets() {
        return qnnSdkRoot().isBlank() ? "ort-qnn" : "ort-qnn,qnn-context-binary,qnn-model-lib,genie";
    }

    /** The QNN SDK the compile service runs: the system property hexforge.qnn-sdk-root, else QNN_SDK_ROOT, else none (""). */
    static String qnnSdkRoot() {
        String sdk = System.getProperty("hexforge.qnn-sdk-root", System.getenv("QNN_SDK_ROOT"));
        return sdk == null ? "" : sdk.strip();
    }

    /** This machine as a device runner of tenant "default" (its token made on the first start, kept in secrets/). */
    private void startLocalRunner(Path home) throws IOException {
        Path file = home.resolve("secrets/device-token");
        if (!Files.isRegularFile(file)) {
            Folders.writePrivate(file, gateway.getBean(DeviceService.class).add("default", "local"));
        }
        runner = new RunnerLoop(new GatewayClient(gatewayUrl(), Files.readString(file).strip()),
                Files.createDirectories(home.resolve("work/runner")), DeviceProfile.host(1, null),
                List.of(Keys.publicOf(Keys.readPrivate(signingKey(home)))));
        Thread t = new Thread(runner, "hexforge-local-runner");
        t.setDaemon(true);
        t.start();
    }

    /** The artifact service's internal API (on loopback; it answers the gateway's secret only). */
    public String artifactServiceUrl() {
        return stageServices.stream().filter(c -> c.getEnvironment().getProperty("local.server.port") != null).findFirst()
                .map(c -> "http://127.0.0.1:" + c.getEnvironment().getProperty("local.server.port")).orElseThrow();
    }

    public String gatewayUrl() {
        return "http://127.0.0.1:" + gateway.getEnvironment().getProperty("local.server.port");
    }

    /** How long the gateway's checks took for each job it accepted (bench-fleet). */
    public SubmissionTimings submissionTimings() {
        return gateway.getBean(SubmissionTimings.class);
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
            if (runner != null) {
                runner.close();
            }
            gateway.close();
            stageServices.forEach(ConfigurableApplicationContext::close);
        } finally {
            infra.close();
        }
    }
}
