package dev.hexforge.devicerunner;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import dev.hexforge.client.ArtifactDownloader;
import dev.hexforge.client.GatewayClient;
import dev.hexforge.io.Folders;
import dev.hexforge.signing.Keys;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.nio.file.Files;
import java.nio.file.Path;
import java.security.PublicKey;
import java.util.concurrent.Callable;

/** The device-runner's command line: benchmark a signed bundle folder, or an artifact fetched from the fleet. */
@Command(name = "hexforge-device-runner", mixinStandardHelpOptions = true,
        description = "Runs signed Hexforge bundles on this device's backends and reports benchmarks.",
        subcommands = {Main.Serve.class, Main.Bench.class, Main.Run.class})
public final class Main implements Runnable {
    static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

    public static void main(String[] args) {
        System.exit(run(args));
    }

    public static int run(String... args) {
        return new CommandLine(new Main()).setExecutionExceptionHandler((e, cmd, parsed) -> {
            System.err.println("hexforge-device-runner: " + e.getMessage());
            return 1;
        }).execute(args);
    }

    @Override
    public void run() {
        new CommandLine(this).usage(System.out);
    }

    /** Options every benchmark takes. */
    static class BenchOptions {
        @Option(names = "--prompt-length", defaultValue = "64", description = "prompt tokens (default ${DEFAULT-VALUE})")
        int promptLength;
        @Option(names = "--new-tokens", defaultValue = "32", description = "decoded tokens (default ${DEFAULT-VALUE})")
        int newTokens;
        @Option(names = "--threads", defaultValue = "1", description = "ONNX Runtime intra-op threads (default ${DEFAULT-VALUE})")
        int threads;
    }

    static int bench(Path dir, PublicKey key, BenchOptions o) throws Exception {
        try {
            SignedBundle bundle = SignedBundle.verify(dir, key);
            BenchmarkResult r = new OrtCpuBackend(o.threads).run(bundle, o.promptLength, o.newTokens, null, null);
            System.out.println(JSON.writeValueAsString(r));
            return 0;
        } catch (BundleRefusedException e) {
            System.err.println("hexforge-device-runner: " + e.getMessage());
            return 2;
        }
    }

    @Command(name = "serve", mixinStandardHelpOptions = true,
            description = "Serve the fleet: register this device (HEXFORGE_URL, HEXFORGE_DEVICE_TOKEN from `hexforge device add`), "
                    + "then take benchmark tasks until stopped.")
    static final class Serve implements Callable<Integer> {
        @Option(names = "--work", description = "where bundles are fetched to (default: a temporary folder)")
        Path work;
        @Option(names = "--threads", defaultValue = "1", description = "ONNX Runtime intra-op threads (default ${DEFAULT-VALUE})")
        int threads;

        @Override
        public Integer call() throws Exception {
            String url = System.getenv().getOrDefault("HEXFORGE_URL", "http://127.0.0.1:8080");
            String token = System.getenv("HEXFORGE_DEVICE_TOKEN");
            if (token == null || token.isBlank()) {
                throw new IllegalArgumentException("set HEXFORGE_DEVICE_TOKEN (create one with `hexforge device add NAME`)");
            }
            Path dir = work != null ? Files.createDirectories(work) : Files.createTempDirectory("hexforge-runner");
            System.err.println("hexforge-device-runner: serving " + url + " from " + dir);
            new RunnerLoop(new GatewayClient(url, token), dir, threads).run();
            return 0;
        }
    }

    @Command(name = "bench", mixinStandardHelpOptions = true,
            description = "Verify a bundle folder's signature, then benchmark it on ort-cpu; prints the result as JSON. "
                    + "Exit 2 when the bundle is refused.")
    static final class Bench implements Callable<Integer> {
        @Parameters(index = "0", description = "bundle folder (with model.sig)")
        Path dir;
        @Option(names = "--key", required = true, description = "the fleet's PEM public key")
        Path key;
        @CommandLine.Mixin
        BenchOptions options = new BenchOptions();

        @Override
        public Integer call() throws Exception {
            return bench(dir, Keys.readPublic(key), options);
        }
    }

    @Command(name = "run", mixinStandardHelpOptions = true,
            description = "Fetch an artifact from the fleet (HEXFORGE_URL, HEXFORGE_TOKEN), verify it, benchmark it on ort-cpu, "
                    + "then delete the local copy. Exit 2 when the bundle is refused.")
    static final class Run implements Callable<Integer> {
        @Parameters(index = "0", description = "artifact id")
        String artifact;
        @Option(names = "--key", description = "PEM public key (default: the fleet's key the signature names)")
        Path key;
        @Option(names = "--work", description = "where bundles are fetched to (default: a temporary folder)")
        Path work;
        @CommandLine.Mixin
        BenchOptions options = new BenchOptions();

        @Override
        public Integer call() throws Exception {
            Path base = work != null ? Files.createDirectories(work) : Files.createTempDirectory("hexforge-runner");
            Path dir = base.resolve(artifact);
            try {
                ArtifactDownloader.Result got = new ArtifactDownloader(GatewayClient.fromEnvironment())
                        .download(artifact, dir, key == null ? null : Keys.readPublic(key), (p, d, n) -> { });
                return bench(dir, got.key(), options); // verified again right before loading

            } finally {
                Folders.deleteQuietly(dir);
                Folders.deleteQuietly(ArtifactDownloader.staging(dir));
            }
        }
    }
}
