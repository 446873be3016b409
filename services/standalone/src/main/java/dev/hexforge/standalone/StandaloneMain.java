package dev.hexforge.standalone;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.concurrent.CountDownLatch;

/** {@code hexforge up} (the fleet in the foreground) and {@code hexforge demo} (the demo job through it). */
public final class StandaloneMain {
    private StandaloneMain() {
    }

    public static void main(String[] args) throws Exception {
        String cmd = args.length == 0 ? "help" : args[0];
        String[] rest = Arrays.copyOfRange(args, Math.min(1, args.length), args.length);
        if (cmd.equals("up") || cmd.equals("demo")) {
            Files.createDirectories(Standalone.home());
            Path log = FleetLogs.toFile(Standalone.home());
            System.out.println("logs     " + log + " (the console shows errors only)");
        }
        try {
            switch (cmd) {
                case "up" -> up(rest);
                case "demo" -> System.exit(new Demo(option(rest, "--out")).run());
                case "bench-fleet" -> System.exit(FleetBench.run(rest));
                default -> {
                    System.err.println("usage: hexforge up [--port 8080] | hexforge demo [--out DIR]"
                            + " | hexforge bench-fleet [--jobs 200] [--concurrency 8] [--transfer-mb 1024]");
                    System.exit(2);
                }
            }
        } catch (RuntimeException e) {
            System.err.println("hexforge: error: " + (e.getMessage() == null ? e : e.getMessage()));
            System.exit(1);
        }
    }

    private static void up(String[] args) throws InterruptedException {
        String port = option(args, "--port");
        long t0 = System.nanoTime();
        Standalone fleet = Standalone.start(Standalone.home(), port == null ? Standalone.GATEWAY_PORT : Integer.parseInt(port));
        System.out.printf("Hexforge is up in %.1fs: %s/api/v1/jobs (state in %s; API token in %s). Ctrl-C stops it.%n",
                (System.nanoTime() - t0) / 1e9, fleet.gatewayUrl(), Standalone.home(), Standalone.tokenFile(Standalone.home()));
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            fleet.close();
            stopped.countDown();
        }));
        stopped.await();
    }

    static String option(String[] args, String name) {
        for (int i = 0; i + 1 < args.length; i++) {
            if (args[i].equals(name)) {
                return args[i + 1];
            }
        }
        return null;
    }

    static Path hexforgeHome() {
        return Path.of(System.getProperty("hexforge.home", "."));
    }
}
