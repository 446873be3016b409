package dev.hexforge.devicerunner.adb;

import dev.hexforge.compile.Soc;

import java.util.Map;
import java.util.Optional;

/**
 * An Android phone attached over USB, as {@code getprop} and {@code /proc/meminfo} describe it.
 *
 * @param soc the chipset name (SM8650...), or null when the phone does not say
 */
public record Phone(String serial, String model, String soc, String android, long ramBytes) {
    /** Board platform names of phones too old for {@code ro.soc.model} (Android 12+). */
    private static final Map<String, String> PLATFORMS = Map.of("taro", "SM8450", "kalama", "SM8550", "pineapple", "SM8650",
            "sun", "SM8750");

    public static Phone read(Adb adb, String serial) {
        String soc = adb.getprop(serial, "ro.soc.model");
        if (soc.isEmpty()) {
            soc = PLATFORMS.get(adb.getprop(serial, "ro.board.platform"));
        }
        long ram = 0;
        for (String line : adb.shell(serial, "cat /proc/meminfo", 30).split("\n")) {
            if (line.startsWith("MemTotal:")) {
                ram = Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
            }
        }
        return new Phone(serial, adb.getprop(serial, "ro.product.model"), soc == null || soc.isEmpty() ? null : soc,
                adb.getprop(serial, "ro.build.version.release"), ram);
    }

    public Optional<Soc> knownSoc() {
        return soc == null ? Optional.empty() : Soc.find(soc);
    }

    public String describe() {
        return model + " (" + serial + ", " + knownSoc().map(Soc::marketing).orElse(soc == null ? "unknown SoC" : soc)
                + ", Android " + android + ")";
    }
}
