package dev.hexforge.kernels;

import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

class CTriadTest {
    @Test
    void theCompiledTriadReportsAPlausibleBandwidthAndLeavesNoFolderBehind() throws Exception {
        assumeTrue(ccOnPath(), "no C compiler on PATH");
        Path tmp = Path.of(System.getProperty("java.io.tmpdir"));
        long before = countTriadFolders(tmp);
        double bytesPerSecond;
        try (CTriad triad = CTriad.build()) {
            bytesPerSecond = triad.run(1);
        }
        // three 64 MB arrays, best of eight passes: any machine that runs the build moves between 1 and 1,000 GB/s
        assertTrue(bytesPerSecond > 1e9 && bytesPerSecond < 1e12, "triad read " + bytesPerSecond + " bytes/s");
        assertTrue(countTriadFolders(tmp) <= before, "the compiled triad's folder is deleted when closed");
    }

    @Test
    void theMeasuredBandwidthIsTheCTriadsWhereThisMachineCompilesIt() {
        assumeTrue(ccOnPath(), "no C compiler on PATH");
        MemoryBandwidth.Measured m = MemoryBandwidth.measure(1);
        assertTrue(m.fromC(), m.toString());
        assertEquals("triad in C, 1 thread", m.describe(1));
        assertTrue(m.jvmBytesPerSecond() > 1e9 && m.bytesPerSecond() > 1e9, m.toString());
    }

    private static boolean ccOnPath() {
        return Stream.of(System.getenv("PATH").split(java.io.File.pathSeparator)).anyMatch(d -> Files.isExecutable(Path.of(d, "cc")));
    }

    private static long countTriadFolders(Path tmp) throws Exception {
        try (var s = Files.list(tmp)) {
            return s.filter(p -> p.getFileName().toString().startsWith("hexforge-triad")).count();
        }
    }
}
