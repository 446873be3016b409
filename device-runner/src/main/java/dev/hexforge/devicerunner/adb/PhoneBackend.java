package dev.hexforge.devicerunner.adb;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.hexforge.compile.Soc;
import dev.hexforge.devicerunner.Backend;
import dev.hexforge.devicerunner.SignedBundle;
import dev.hexforge.io.Folders;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/**
 * What the backends that run a bundle on a phone over adb share: the phone, the SDK on this host its runtime comes
 * from, the readings taken on the phone, the bundle's manifest held to the backend's compile target and the phone's
 * SoC, a folder of the task's own on the phone, and its removal whatever happened.
 */
abstract class PhoneBackend implements Backend {
    static final ObjectMapper JSON = new ObjectMapper();
    final Adb adb;
    final Phone phone;
    final Path sdk;
    final PhoneReadings readings;

    PhoneBackend(Adb adb, Phone phone, Path sdk) {
        this.adb = adb;
        this.phone = phone;
        this.sdk = sdk;
        this.readings = new PhoneReadings(adb, phone);
    }

    /**
     * The bundle's manifest when it was compiled for {@code target} (compile.target) for this phone's SoC; otherwise
     * refused, naming what the device would have said ({@code error} 5000 or 5005) and the setting to change.
     */
    JsonNode manifest(Path dir, String target, String bundleName, int error) {
        Path file = dir.resolve("manifest.json");
        JsonNode m;
        try {
            m = Files.isRegularFile(file) ? JSON.readTree(file.toFile()) : null;
        } catch (IOException e) {
            throw new UncheckedIOException("reading " + file + ": " + e.getMessage(), e);
        }
        String got = m == null ? "an export without a compile stage" : m.path("target").asText();
        if (!target.equals(got)) {
            throw new IllegalArgumentException(name() + " runs " + bundleName + " (compile.target: " + target + "); this one is " + got);
        }
        String builtFor = m.path("soc").asText();
        if (phone.soc() != null && !phone.soc().equalsIgnoreCase(builtFor)) {
            throw new IllegalArgumentException("the bundle's context binaries were built for " + builtFor + " but " + phone.describe()
                    + " is " + phone.soc() + " (QNN would fail with error " + error + "): compile with compile.soc: " + phone.soc());
        }
        return m;
    }

    /** The SDK's files the phone needs, each checked to be there, for what {@code needed} says. */
    List<Path> sdkFiles(List<Path> files, String needed, String install) {
        for (Path f : files) {
            if (!Files.isRegularFile(f)) {
                throw new IllegalStateException("the QNN SDK at " + sdk + " has no " + sdk.relativize(f) + " (needed to " + needed
                        + "): install a QAIRT SDK with " + install);
            }
        }
        return files;
    }

    /** The phone's memory bandwidth, the roofline of a decode step: its SoC's spec-sheet peak, or null when not known. */
    record Roofline(Double bytesPerSecond, String source) {
        /** The share of the bandwidth a decode reading {@code weightBytes} a token at {@code tokensPerSecond} uses. */
        Double efficiency(double tokensPerSecond, long weightBytes) {
            return bytesPerSecond == null ? null : tokensPerSecond * weightBytes / bytesPerSecond;
        }
    }

    /** This phone's roofline; when its SoC is not in the table, why the efficiency is not available. */
    Roofline roofline(Map<String, String> notAvailable) {
        Soc soc = phone.knownSoc().orElse(null);
        if (soc == null || soc.memoryBandwidth() <= 0) {
            notAvailable.put("efficiency", "the phone's SoC (" + phone.soc() + ") is not in the SoC table, so its memory bandwidth is not known");
            return new Roofline(null, null);
        }
        return new Roofline(soc.memoryBandwidth(), soc.marketing() + " spec-sheet peak (SoC table)");
    }

    /** The task's folder on the phone, named after the bundle's. */
    static String remote(SignedBundle bundle) {
        return AdbQnnBackend.REMOTE_BASE + bundle.dir().getFileName().toString().replaceAll("[^A-Za-z0-9._-]", "_");
    }

    /** Removes the task's folder on the phone (if it is still there to ask) and the staging folder here. */
    void cleanUp(String remote, Path stage) {
        try {
            adb.shell(phone.serial(), "rm -rf " + remote, 60);
        } catch (AdbException ignored) {
            // the phone went away; nothing is left to clean on this side
        }
        if (stage != null) {
            Folders.deleteQuietly(stage);
        }
    }
}
