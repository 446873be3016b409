package dev.hexforge.devicerunner.adb;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The Android Debug Bridge as the runner uses it: {@code adb devices -l} to find phones, and per phone (always with
 * {@code -s SERIAL}, since several may be attached) {@code shell}, {@code push} and {@code pull}.
 */
public final class Adb {
    private final String executable;

    /** @param executable the adb binary (a path, or "adb" to take it from PATH) */
    public Adb(String executable) {
        this.executable = executable;
    }

    /** adb from {@code HEXFORGE_ADB}, else from the Android SDK ({@code ANDROID_HOME/platform-tools}), else PATH. */
    public static Adb fromEnvironment() {
        String explicit = System.getenv("HEXFORGE_ADB");
        if (explicit != null && !explicit.isBlank()) {
            return new Adb(explicit);
        }
        String sdk = System.getenv("ANDROID_HOME");
        if (sdk != null && Files.isExecutable(Path.of(sdk, "platform-tools", "adb"))) {
            return new Adb(Path.of(sdk, "platform-tools", "adb").toString());
        }
        return new Adb("adb");
    }

    /** A line of {@code adb devices -l}: the serial, its state (device, unauthorized, offline...) and model when given. */
    public record Attached(String serial, String state, String model) {
        public boolean ready() {
            return state.equals("device");
        }
    }

    public List<Attached> devices() {
        List<Attached> out = new ArrayList<>();
        for (String line : run(List.of("devices", "-l"), 30).split("\n")) {
            line = line.strip();
            if (line.isEmpty() || line.startsWith("List of devices") || line.startsWith("*")) {
                continue;
            }
            String[] f = line.split("\\s+");
            if (f.length < 2) {
                continue;
            }
            String model = null;
            for (String x : f) {
                if (x.startsWith("model:")) {
                    model = x.substring(6);
                }
            }
            out.add(new Attached(f[0], f[1], model));
        }
        return out;
    }

    /** Runs a shell command on the phone and returns what it printed; a non-zero exit is an {@link AdbException}. */
    public String shell(String serial, String command, long timeoutSeconds) {
        return run(List.of("-s", serial, "shell", command), timeoutSeconds);
    }

    public String getprop(String serial, String key) {
        return shell(serial, "getprop " + key, 30).strip();
    }

    public void push(String serial, Path local, String remote) {
        run(List.of("-s", serial, "push", local.toString(), remote), 3600);
    }

    public void pull(String serial, String remote, Path local) {
        run(List.of("-s", serial, "pull", remote, local.toString()), 3600);
    }

    private String run(List<String> args, long timeoutSeconds) {
        List<String> cmd = new ArrayList<>();
        cmd.add(executable);
        cmd.addAll(args);
        Path log;
        Process p;
        try {
            log = Files.createTempFile("hexforge-adb", ".log");
            p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(log.toFile()).start();
        } catch (IOException e) {
            throw new AdbException("cannot run " + executable + ": " + e.getMessage() + " (install Android platform-tools, or set HEXFORGE_ADB)", e);
        }
        try {
            if (!p.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new AdbException("adb " + summary(args) + " did not finish in " + timeoutSeconds + " s");
            }
            String text = Files.readString(log, StandardCharsets.UTF_8);
            if (p.exitValue() != 0) {
                throw new AdbException("adb " + summary(args) + " failed (exit " + p.exitValue() + "): " + tail(text));
            }
            return text;
        } catch (IOException e) {
            throw new AdbException("reading adb's output: " + e.getMessage(), e);
        } catch (InterruptedException e) {
            p.destroyForcibly();
            Thread.currentThread().interrupt();
            throw new AdbException("interrupted while adb ran", e);
        } finally {
            try {
                Files.deleteIfExists(log);
            } catch (IOException ignored) {
                // a temp file
            }
        }
    }

    private static String summary(List<String> args) {
        String s = String.join(" ", args);
        return s.length() > 200 ? s.substring(0, 200) + "..." : s;
    }

    private static String tail(String text) {
        String t = text.strip();
        return t.length() > 2000 ? "..." + t.substring(t.length() - 2000) : t;
    }
}
