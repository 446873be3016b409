package dev.hexforge.cli;

import dev.hexforge.testing.Fixtures;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * SIGINT and SIGTERM sent to the CLI while ONNX Runtime runs (the quantize gate's scoring, perplexity, generation):
 * the process ends with 130 / 143 and one line, no JVM crash report, and nothing half-written (before, a stopped
 * quantize left its output folder with the work files in it). Each command runs in a JVM of its own, signalled once
 * ONNX Runtime's library is loaded into it.
 */
class StopTest {
    @TempDir
    static Path tmp;
    static Path staticExport;
    static Path longText;

    @BeforeAll
    static void export() throws Exception {
        staticExport = tmp.resolve("static");
        assertEquals(0, Main.run("export", "--model", Fixtures.qwen2Tiny().toString(), "--variant", "static", "--out", staticExport.toString()));
        longText = tmp.resolve("long.txt");
        String text = Files.readString(Fixtures.root().resolve("corpus/eval.txt"));
        Files.writeString(longText, text + "\n" + text + "\n" + text);
    }

    record Ended(int code, String err, Path dir) {
    }

    /** Runs the CLI in its own JVM in a fresh folder, sends {@code signal} once ONNX Runtime is loaded and {@code afterMs} more. */
    static Ended signalled(String signal, long afterMs, String... args) throws Exception {
        Path dir = Files.createTempDirectory(tmp, "run");
        // env resets SIGINT to its default: a process started in the background by a script (CI's run) inherits SIGINT
        // ignored, and a JVM leaves an ignored SIGINT ignored, as a terminal's Ctrl-C never reaches such a process
        List<String> cmd = new ArrayList<>(List.of("env", "--default-signal=INT", Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--add-modules", "jdk.incubator.vector", "-Xmx1g", "-cp", System.getProperty("java.class.path"), Main.class.getName()));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).directory(dir.toFile()).redirectOutput(dir.resolve("out.txt").toFile())
                .redirectError(dir.resolve("err.txt").toFile()).start();
        Path maps = Path.of("/proc", String.valueOf(p.pid()), "maps");
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
        while (p.isAlive() && !loaded(maps)) {
            assertTrue(System.nanoTime() < deadline, "ONNX Runtime was not loaded within 120 s");
            Thread.sleep(20);
        }
        Thread.sleep(afterMs);
        assertTrue(p.isAlive(), "the command ended before the signal: make its work longer; " + Files.readString(dir.resolve("err.txt")));
        new ProcessBuilder("kill", "-" + signal, String.valueOf(p.pid())).start().waitFor();
        assertTrue(p.waitFor(90, TimeUnit.SECONDS), "the process ended after the signal");
        return new Ended(p.exitValue(), Files.readString(dir.resolve("err.txt")), dir);
    }

    static boolean loaded(Path maps) {
        try {
            return Files.readString(maps).contains("onnxruntime");
        } catch (IOException | RuntimeException notYet) {
            return false;
        }
    }

    static void assertStoppedCleanly(Ended e, String signal) throws IOException {
        int code = signal.equals("INT") ? 130 : 143;
        assertEquals(code, e.code(), e.err());
        assertTrue(e.err().contains("hexforge: stopped by SIG" + signal), e.err());
        assertFalse(e.err().contains("error:") || e.err().contains("Exception") || e.err().contains("fatal error"), e.err());
        try (var files = Files.list(e.dir())) {
            assertTrue(files.noneMatch(f -> f.getFileName().toString().startsWith("hs_err")), "no JVM crash report");
        }
    }

    @ParameterizedTest
    @CsvSource({"INT", "TERM"})
    void aQuantizeStoppedInItsGateLeavesOnlyItsWorkToResumeFrom(String signal) throws Exception {
        Path out = tmp.resolve("q-" + signal);
        Ended e = signalled(signal, 100, "quantize", "--model", Fixtures.qwen2Tiny().toString(), "--method", "rtn", "--bits", "4",
                "--format", "matmulnbits", "--eval", longText.toString(), "--eval-tokens", "60000", "--out", out.toString());
        assertStoppedCleanly(e, signal);
        try (var files = Files.list(out)) {
            assertEquals(List.of(".work"), files.map(f -> f.getFileName().toString()).toList(),
                    "no output half-written: only the work the same command continues from");
        }
        assertTrue(Files.isRegularFile(out.resolve(".work/run.json")));
    }

    @ParameterizedTest
    @CsvSource({"INT", "TERM"})
    void perplexityAndGenerationStopCleanly(String signal) throws Exception {
        assertStoppedCleanly(signalled(signal, 300, "eval", "ppl", "--model", staticExport.toString(), "--text", longText.toString()), signal);
        assertStoppedCleanly(signalled(signal, 300, "generate", "--model", staticExport.toString(), "--prompt-ids", "1,2,3",
                "--max-new", "480", "--no-stop", "--greedy"), signal);
    }
}
