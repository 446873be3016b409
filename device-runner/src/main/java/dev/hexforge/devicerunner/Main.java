package dev.hexforge.devicerunner;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import dev.hexforge.client.ArtifactDownloader;
import dev.hexforge.client.GatewayClient;
import dev.hexforge.contracts.BenchmarkResult;
import dev.hexforge.devicerunner.adb.Adb;
import dev.hexforge.devicerunner.adb.Phone;
import dev.hexforge.eval.DeviceReference;
import dev.hexforge.io.Folders;
import dev.hexforge.signing.Keys;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine;

import java.nio.file.Files;
import java.nio.file.Path;
import java.security.PublicKey;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.Callable;

/** The device-runner's command line: benchmark a signed bundle folder, or an artifact fetched from the fleet. */
@Command(name = "hexforge-device-runner", mixinStandardHelpOptions = true,
        description = "Runs signed Hexforge bundles on this device's backends and reports benchmarks.",
        subcommands = {Main.Serve.class, Main.Bench.class, Main.Run.class, Main.Phones.class})
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
            BenchmarkResult r = OrtBackend.cpu(o.threads).run(bundle, o.promptLength, o.newTokens,
                    DeviceReference.read(dir));
            System.out.println(JSON.writeValueAsString(r));
            return 0;
        } catch (BundleRefusedException e) {
            System.err.println("hexforge-device-runner: " + e.getMessage());
            return 2;
        }
    }

    @Command(name = "serve", mixinStandardHelpOptions = true,
            description = "Serve the fleet (HEXFORGE_URL): this host as a device (HEXFORGE_DEVICE_TOKEN from `hexforge device add`), "
                    + "and each phone named in --adb-tokens as a device of its own; take benchmark tasks until stopped.")
    static final class Serve implements Callable<Integer> {
        @Option(names = "--work", description = "where bundles are fetched to (default: a temporary folder)")
        Path work;
        @Option(names = "--threads", defaultValue = "1", description = "ONNX Runtime intra-op threads (default ${DEFAULT-VALUE})")
        int threads;
        @Option(names = "--soc", description = "this host's Snapdragon chipset (e.g. SC8380XP), when it has an NPU")
        String soc;
        @Option(names = "--adb-tokens", description = "a properties file SERIAL=DEVICE_TOKEN: each attached phone listed serves "
                + "as its own device with the adb-qnn backend (see `phones`)")
        Path adbTokens;
        @Option(names = "--qnn-sdk", description = "QNN SDK (QAIRT) root for adb-qnn (default: QNN_SDK_ROOT)")
        Path qnnSdk;
        @Option(names = "--trust", required = true, description = "the fleet's public signing key (PEM; `hexforge keygen` or GET "
                + "/api/v1/keys once, out of band); repeat for keys kept across a rotation. Bundles signed otherwise are refused")
        List<Path> trust;

        @Override
        public Integer call() throws Exception {
            String url = System.getenv().getOrDefault("HEXFORGE_URL", "http://127.0.0.1:8080");
            String token = System.getenv("HEXFORGE_DEVICE_TOKEN");
            Path dir = work != null ? Files.createDirectories(work) : Files.createTempDirectory("hexforge-runner");
            List<RunnerLoop> loops = new ArrayList<>();
            List<PublicKey> trusted = trust.stream().map(Keys::readPublic).toList();
            if (token != null && !token.isBlank()) {
                loops.add(new RunnerLoop(new GatewayClient(url, token), dir.resolve("host"), DeviceProfile.host(threads, soc), trusted));
            }
            if (adbTokens != null) {
                Path sdk = qnnSdk != null ? qnnSdk : System.getenv("QNN_SDK_ROOT") == null ? null : Path.of(System.getenv("QNN_SDK_ROOT"));
                if (sdk == null) {
                    throw new IllegalArgumentException("adb-qnn needs the QNN SDK: set QNN_SDK_ROOT or --qnn-sdk");
                }
                Properties phones = new Properties();
                try (var in = Files.newBufferedReader(adbTokens)) {
                    phones.load(in);
                }
                Adb adb = Adb.fromEnvironment();
                Map<String, Adb.Attached> attached = new HashMap<>();
                adb.devices().forEach(a -> attached.put(a.serial(), a));
                for (String serial : phones.stringPropertyNames()) {
                    var a = attached.get(serial);
                    if (a == null || !a.ready()) {
                        throw new IllegalArgumentException("phone " + serial + " from " + adbTokens + " is " + (a == null ? "not attached"
                                : a.state()) + " (see `hexforge-device-runner phones`)");
                    }
                    var phone = Phone.read(adb, serial);
                    loops.add(new RunnerLoop(new GatewayClient(url, phones.getProperty(serial).strip()), dir.resolve(serial),
                            DeviceProfile.phone(adb, phone, sdk), trusted));
                }
            }
            if (loops.isEmpty()) {
                throw new IllegalArgumentException("nothing to serve: set HEXFORGE_DEVICE_TOKEN (create one with `hexforge device add NAME`) "
                        + "and/or give --adb-tokens");
            }
            System.err.println("hexforge-device-runner: serving " + url + " as " + loops.size() + " device(s) from " + dir);
            List<Thread> threadsRunning = new ArrayList<>();
            for (RunnerLoop loop : loops) {
                Files.createDirectories(loop.work());
                Thread t = new Thread(loop, "hexforge-runner-" + threadsRunning.size());
                t.start();
                threadsRunning.add(t);
            }
            for (Thread t : threadsRunning) {
                t.join();
            }
            return 0;
        }
    }

    @Command(name = "phones", mixinStandardHelpOptions = true,
            description = "Phones attached over adb, each with its model and SoC: a device of its own for `serve --adb-tokens`.")
    static final class Phones implements Callable<Integer> {
        @Override
        public Integer call() {
            Adb adb = Adb.fromEnvironment();
            var attached = adb.devices();
            if (attached.isEmpty()) {
                System.out.println("no phones attached (enable USB debugging and connect one; `adb devices` lists them)");
            }
            for (var a : attached) {
                if (!a.ready()) {
                    System.out.println(a.serial() + "  " + a.state() + (a.state().equals("unauthorized")
                            ? "  (accept the USB debugging prompt on the phone)" : ""));
                    continue;
                }
                var p = Phone.read(adb, a.serial());
                System.out.println(p.serial() + "  " + p.model() + "  " + (p.soc() == null ? "unknown SoC" : p.soc())
                        + p.knownSoc().map(k -> " (" + k.marketing() + ", HTP v" + k.htpArch() + ")").orElse("")
                        + "  Android " + p.android() + "  " + (p.ramBytes() >> 20) + " MiB");
            }
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
