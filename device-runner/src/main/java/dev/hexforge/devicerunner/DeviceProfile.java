package dev.hexforge.devicerunner;

import com.sun.management.OperatingSystemMXBean;
import dev.hexforge.compile.QnnSdk;
import dev.hexforge.compile.Soc;
import dev.hexforge.devicerunner.adb.Adb;
import dev.hexforge.devicerunner.adb.AdbQnnBackend;
import dev.hexforge.devicerunner.adb.GenieBackend;
import dev.hexforge.devicerunner.adb.Phone;
import dev.hexforge.onnx.runtime.OrtSessions;

import java.lang.management.ManagementFactory;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * One device as the fleet sees it: what it is (SoC, HTP architecture, RAM, OS, runtime versions) and the backends it
 * runs bundles on. A host is one device; each phone attached over adb is a device of its own.
 *
 * @param soc     chipset name (SM8650...), or null when not known
 * @param htpArch Hexagon architecture (75...), or null
 */
public record DeviceProfile(String name, String soc, Integer htpArch, long ramBytes, String os, String qnnSdk, List<Backend> backends) {

    /**
     * This host: {@code ort-cpu}, plus {@code ort-qnn} when the native ONNX Runtime has the QNN EP (detected, never assumed).
     *
     * @param soc the host's chipset when it has an NPU (a Windows-on-Snapdragon laptop), or null
     */
    public static DeviceProfile host(int threads, String soc) {
        long ram = ManagementFactory.getOperatingSystemMXBean() instanceof OperatingSystemMXBean os
                ? os.getTotalMemorySize() : 0;
        Backend cpu = OrtBackend.cpu(threads);
        List<Backend> backends = OrtBackend.qnnAvailable() ? List.of(cpu, OrtBackend.qnn(threads, soc)) : List.of(cpu);
        Soc known = soc == null ? null : Soc.find(soc).orElse(null);
        return new DeviceProfile("host", soc, known == null ? null : known.htpArch(), ram,
                System.getProperty("os.name") + " " + System.getProperty("os.arch"), null, backends);
    }

    /**
     * A phone attached over adb: the adb-qnn backend, and genie where the SDK has Genie for Android, with the QNN SDK
     * at {@code sdk} providing the phone's runtime.
     */
    public static DeviceProfile phone(Adb adb, Phone phone, Path sdk) {
        List<Backend> backends = GenieBackend.available(sdk)
                ? List.of(new AdbQnnBackend(adb, phone, sdk), new GenieBackend(adb, phone, sdk))
                : List.of(new AdbQnnBackend(adb, phone, sdk));
        return new DeviceProfile(phone.describe(), phone.soc(), phone.knownSoc().map(Soc::htpArch).orElse(null),
                phone.ramBytes(), "Android " + phone.android(), new QnnSdk(sdk).version(), backends);
    }

    public Backend backend(String name) {
        return backends.stream().filter(b -> b.name().equals(name)).findFirst().orElse(null);
    }

    /** The registration body: the fields of the contracts' DeviceInfo. */
    Map<String, Object> info() {
        Map<String, Object> info = new LinkedHashMap<>();
        info.put("soc", soc);
        info.put("htpArch", htpArch == null ? null : String.valueOf(htpArch));
        info.put("backends", backends.stream().map(Backend::name).toList());
        info.put("ramBytes", ramBytes);
        info.put("os", os);
        info.put("onnxRuntime", OrtSessions.runtimeVersion());
        info.put("qnnSdk", qnnSdk);
        return info;
    }
}
