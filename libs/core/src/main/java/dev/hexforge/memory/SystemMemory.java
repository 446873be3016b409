package dev.hexforge.memory;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * What memory this process can really get: its heap limit, and — since a heap grows into memory the machine must
 * have — the machine's available memory ({@code MemAvailable} of {@code /proc/meminfo}: free memory plus what the
 * kernel can reclaim; files on tmpfs are not reclaimable) and the room left under the container's memory limit
 * (cgroup v2 {@code memory.max} − {@code memory.current}, or v1 {@code memory.limit_in_bytes} −
 * {@code memory.usage_in_bytes}). A figure the system does not give (another OS, no limit) is null.
 *
 * @param heapMax      the heap's limit (-Xmx)
 * @param heapUsed     heap in use now: already in memory, so it does not need the machine's room again
 * @param memAvailable the machine's available memory
 * @param cgroupRoom   what the container may still take, or null without a limit
 */
public record SystemMemory(long heapMax, long heapUsed, Long memAvailable, Long cgroupRoom) {
    /** cgroup v1 writes "no limit" as a number near 2^63. */
    private static final long NO_LIMIT = 1L << 60;

    /** This process and this machine now. */
    public static SystemMemory now() {
        Runtime rt = Runtime.getRuntime();
        return read(rt.maxMemory(), rt.totalMemory() - rt.freeMemory(), Path.of("/proc/meminfo"), Path.of("/sys/fs/cgroup"));
    }

    /** From the given files (tests point them at their own). */
    static SystemMemory read(long heapMax, long heapUsed, Path meminfo, Path cgroupRoot) {
        return new SystemMemory(heapMax, heapUsed, memAvailable(meminfo), cgroupRoom(cgroupRoot));
    }

    /** The heap a pass can count on: the limit, or what is in use plus the room the machine and container have. */
    public long heapCanHave() {
        long room = Long.MAX_VALUE;
        if (memAvailable != null) {
            room = memAvailable;
        }
        if (cgroupRoom != null) {
            room = Math.min(room, cgroupRoom);
        }
        return room == Long.MAX_VALUE ? heapMax : Math.min(heapMax, heapUsed + room);
    }

    /** Whether the machine or the container, not the heap limit, is what bounds {@link #heapCanHave}. */
    public boolean boundByMachine() {
        return heapCanHave() < heapMax;
    }

    /** The figures in words: "heap limit 17.6 GB, 1.2 GB in use; the machine has 5.3 GB available (MemAvailable)". */
    public String describe() {
        List<String> parts = new ArrayList<>();
        parts.add("heap limit " + MemoryPlan.gb(heapMax) + ", " + MemoryPlan.gb(heapUsed) + " in use");
        if (memAvailable != null) {
            parts.add("the machine has " + MemoryPlan.gb(memAvailable) + " available (MemAvailable)");
        }
        if (cgroupRoom != null) {
            parts.add("the container's memory limit leaves " + MemoryPlan.gb(cgroupRoom));
        }
        return String.join("; ", parts);
    }

    static Long memAvailable(Path meminfo) {
        try {
            for (String line : Files.readAllLines(meminfo)) {
                if (line.startsWith("MemAvailable:")) {
                    String[] f = line.substring(13).trim().split("\\s+");
                    long v = Long.parseLong(f[0]);
                    return f.length > 1 && f[1].toLowerCase(Locale.ROOT).equals("kb") ? v * 1024 : v;
                }
            }
        } catch (IOException | RuntimeException notThere) {
            // not Linux, or not readable: the figure is not known
        }
        return null;
    }

    static Long cgroupRoom(Path root) {
        Long v2 = room(root.resolve("memory.max"), root.resolve("memory.current"));
        return v2 != null ? v2 : room(root.resolve("memory/memory.limit_in_bytes"), root.resolve("memory/memory.usage_in_bytes"));
    }

    private static Long room(Path limitFile, Path usageFile) {
        try {
            String limit = Files.readString(limitFile).trim();
            if (limit.equals("max")) {
                return null;
            }
            long l = Long.parseLong(limit);
            if (l >= NO_LIMIT) {
                return null;
            }
            return Math.max(0, l - Long.parseLong(Files.readString(usageFile).trim()));
        } catch (IOException | RuntimeException notThere) {
            return null;
        }
    }
}
