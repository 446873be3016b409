package dev.hexforge.kernels;

import dev.hexforge.io.Folders;

import java.nio.file.Files;
import java.nio.file.Path;

/**
 * STREAM's triad in C ({@code triad.c}), compiled here with the system compiler and run as a process: the process-level
 * baseline {@link MemoryBandwidth#measure} prefers, since the JVM's own triad read a fifth less than C on one CPU
 * (docs/benchmarks.md, 2026-12-05).
 */
public final class CTriad implements AutoCloseable {
    private final Path exe; // alone in a temporary folder, deleted on close

    private CTriad(Path exe) {
        this.exe = exe;
    }

    /** Compiles the triad; throws with the compiler's message when {@code cc} is missing or fails. */
    public static CTriad build() throws Exception {
        Path dir = Files.createTempDirectory("hexforge-triad");
        try {
            Path source = dir.resolve("triad.c");
            try (var in = CTriad.class.getResourceAsStream("triad.c")) {
                Files.copy(in, source);
            }
            Path exe = dir.resolve("triad");
            Process cc = new ProcessBuilder("cc", "-O3", "-march=native", "-pthread", "-o", exe.toString(), source.toString())
                    .redirectErrorStream(true).start();
            String log = new String(cc.getInputStream().readAllBytes());
            if (cc.waitFor() != 0) {
                throw new IllegalStateException("cc could not build the C triad: " + log.strip());
            }
            return new CTriad(exe);
        } catch (Exception e) {
            Folders.deleteQuietly(dir);
            throw e;
        }
    }

    /** Bytes per second moved by {@code threads} threads, best of the program's eight passes. */
    public double run(int threads) throws Exception {
        Process p = new ProcessBuilder(exe.toString(), String.valueOf(threads)).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes()).strip();
        if (p.waitFor() != 0) {
            throw new IllegalStateException("the C triad failed: " + out);
        }
        return Double.parseDouble(out);
    }

    @Override
    public void close() {
        Folders.deleteQuietly(exe.getParent());
    }
}
