package dev.hexforge.memory;

import dev.hexforge.checkpoint.ModelConfig;
import dev.hexforge.contracts.ErrorCode;
import dev.hexforge.contracts.HexforgeException;
import dev.hexforge.safetensors.DType;
import dev.hexforge.synth.Preset;
import dev.hexforge.synth.SyntheticCheckpoint;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A pass is refused with the figures when the machine or the container cannot give the heap room to grow, though the
 * heap's limit would allow it (10 GB held on tmpfs, a container limit), and runs when the memory is there.
 */
class SystemMemoryTest {
    static final long GB = 1L << 30;

    @TempDir
    Path tmp;

    Path meminfo(long availableKb) throws IOException {
        Path f = tmp.resolve("meminfo-" + availableKb);
        Files.writeString(f, "MemTotal:       24683764 kB\nMemFree:         1030000 kB\nMemAvailable:   " + availableKb + " kB\n"
                + "Shmem:          10485760 kB\n");
        return f;
    }

    Path cgroup(String version, String limit, String usage) throws IOException {
        Path root = Files.createDirectories(tmp.resolve("cg-" + version + "-" + limit));
        if (version.equals("v2")) {
            Files.writeString(root.resolve("memory.max"), limit + "\n");
            Files.writeString(root.resolve("memory.current"), usage + "\n");
        } else {
            Path m = Files.createDirectories(root.resolve("memory"));
            Files.writeString(m.resolve("memory.limit_in_bytes"), limit + "\n");
            Files.writeString(m.resolve("memory.usage_in_bytes"), usage + "\n");
        }
        return root;
    }

    static MemoryPlan.Estimate gptq15() {
        ModelConfig c = SyntheticCheckpoint.config(SyntheticCheckpoint.Options.of(Preset.QWEN2_5_1_5B, DType.BF16, 0));
        return MemoryPlan.quantize(c, "gptq", 128, 512, false, 2);
    }

    @Test
    void theMachinesAvailableMemoryBoundsTheHeapAPassCanCountOn() throws IOException {
        MemoryPlan.Estimate e = gptq15();
        // the launcher's old heap: 75% of 24 GB; the machine: 2 GB available once 10 GB sit on tmpfs
        SystemMemory held = SystemMemory.read(18 * GB, GB / 4, meminfo(2 * 1024 * 1024), tmp.resolve("no-cgroup"));
        assertEquals(GB / 4 + 2 * GB, held.heapCanHave());
        HexforgeException x = assertThrows(HexforgeException.class, () -> MemoryPlan.require(e, held));
        assertEquals(ErrorCode.OUT_OF_MEMORY, x.code());
        assertTrue(x.getMessage().startsWith("quantize needs about ") && x.getMessage().contains("this process can have 2.4 GB")
                && x.getMessage().contains("the machine has 2.1 GB available (MemAvailable)")
                && x.getMessage().contains("heap limit 19.3 GB"), x.getMessage());
        assertTrue(x.hint().contains("tmpfs"), x.hint());
        // the same pass with the memory there
        MemoryPlan.require(e, SystemMemory.read(18 * GB, GB / 4, meminfo(20L * 1024 * 1024), tmp.resolve("no-cgroup")));
    }

    @Test
    void aContainersLimitBoundsItToo() throws IOException {
        MemoryPlan.Estimate e = gptq15();
        SystemMemory v2 = SystemMemory.read(18 * GB, GB / 4, meminfo(20L * 1024 * 1024), cgroup("v2", String.valueOf(4 * GB), String.valueOf(3 * GB)));
        assertEquals(GB, v2.cgroupRoom());
        HexforgeException x = assertThrows(HexforgeException.class, () -> MemoryPlan.require(e, v2));
        assertTrue(x.getMessage().contains("the container's memory limit leaves 1.1 GB"), x.getMessage());
        SystemMemory v1 = SystemMemory.read(18 * GB, GB / 4, meminfo(20L * 1024 * 1024), cgroup("v1", String.valueOf(4 * GB), String.valueOf(3 * GB)));
        assertEquals(GB, v1.cgroupRoom());
        assertNull(SystemMemory.read(GB, 0, meminfo(1), cgroup("v2", "max", "5")).cgroupRoom(), "v2 without a limit");
        assertNull(SystemMemory.read(GB, 0, meminfo(1), cgroup("v1", "9223372036854771712", "5")).cgroupRoom(), "v1 without a limit");
    }

    @Test
    void withoutTheFiguresTheHeapLimitDecidesAsBefore() {
        SystemMemory none = SystemMemory.read(2 * GB, GB, tmp.resolve("no-meminfo"), tmp.resolve("no-cgroup"));
        assertNull(none.memAvailable());
        assertEquals(2 * GB, none.heapCanHave());
        HexforgeException x = assertThrows(HexforgeException.class, () -> MemoryPlan.require(gptq15(), none));
        assertTrue(x.getMessage().endsWith("this process can have 2.1 GB"), x.getMessage());
        assertTrue(x.hint().contains("-Xmx"), x.hint());
    }

    @Test
    void thisMachinesFiguresAreRead() {
        SystemMemory now = SystemMemory.now();
        if (Files.isReadable(Path.of("/proc/meminfo"))) {
            assertTrue(now.memAvailable() != null && now.memAvailable() > 0, now.describe());
        }
        assertTrue(now.heapCanHave() > 0 && now.heapCanHave() <= now.heapMax(), now.describe());
    }
}
