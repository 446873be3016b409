package dev.hexforge.cli;

import ai.onnxruntime.OrtEnvironment;
import dev.hexforge.memory.MemoryPlan;
import dev.hexforge.memory.SystemMemory;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.io.IOException;
import java.nio.file.FileStore;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Callable;

/** What this machine gives a pass: Java, the heap and where its size came from, cores, memory, tmpfs, ONNX Runtime. */
@Command(name = "doctor", mixinStandardHelpOptions = true,
        description = "Say what this machine gives Hexforge: Java, heap (and the figure the launcher sized it from), cores, "
                + "available memory, the container's limit, /dev/shm, ONNX Runtime.")
final class DoctorCommand implements Callable<Integer> {
    /** Set by bin/hexforge: the figure it sized the heap from. */
    static final String HEAP_BASIS = "hexforge.heapBasis";

    @Option(names = "--json", description = "print one JSON object")
    boolean json;

    @Override
    public Integer call() {
        SystemMemory m = SystemMemory.now();
        String basis = System.getProperty(HEAP_BASIS, "the JVM's own default (not started by bin/hexforge)").replace('_', ' ');
        String ort;
        try {
            ort = OrtEnvironment.getEnvironment().getVersion();
        } catch (RuntimeException | UnsatisfiedLinkError e) {
            ort = "not loadable: " + e.getMessage();
        }
        Long shmUsed = null;
        Long shmTotal = null;
        try {
            if (Files.isDirectory(Path.of("/dev/shm"))) {
                FileStore fs = Files.getFileStore(Path.of("/dev/shm"));
                shmTotal = fs.getTotalSpace();
                shmUsed = fs.getTotalSpace() - fs.getUnallocatedSpace();
            }
        } catch (IOException e) {
            // no tmpfs figure
        }
        Json j = new Json().put("java", System.getProperty("java.version") + " (" + System.getProperty("java.vendor") + ")")
                .put("heapLimitBytes", m.heapMax()).put("heapBasis", basis)
                .put("cores", Runtime.getRuntime().availableProcessors())
                .put("memAvailableBytes", m.memAvailable()).put("containerRoomBytes", m.cgroupRoom())
                .put("heapPassesCanHaveBytes", m.heapCanHave())
                .put("devShmUsedBytes", shmUsed).put("devShmSizeBytes", shmTotal)
                .put("onnxRuntime", ort);
        if (json) {
            j.print();
            return 0;
        }
        System.out.printf("java          %s%n", j.fields().get("java"));
        System.out.printf("heap          %s limit, sized from %s%n", MemoryPlan.gb(m.heapMax()), basis);
        System.out.printf("cores         %d%n", Runtime.getRuntime().availableProcessors());
        System.out.printf("memory        %s%n", m.memAvailable() == null ? "available memory not known (no /proc/meminfo)"
                : MemoryPlan.gb(m.memAvailable()) + " available (MemAvailable)");
        System.out.printf("container     %s%n", m.cgroupRoom() == null ? "no memory limit" : MemoryPlan.gb(m.cgroupRoom()) + " left under its limit");
        System.out.printf("passes        can count on %s of heap%s%n", MemoryPlan.gb(m.heapCanHave()),
                m.boundByMachine() ? " (bounded by the machine's memory, not the heap limit)" : "");
        if (shmTotal != null) {
            System.out.printf("/dev/shm      %s used of %s (tmpfs: held in memory)%n", MemoryPlan.gb(shmUsed), MemoryPlan.gb(shmTotal));
        }
        System.out.printf("onnxruntime   %s%n", ort);
        return 0;
    }
}
