package dev.hexforge.devicerunner.adb;

import java.util.Map;

/**
 * What the runner reads off a phone around a run of a native tool there: the tool's peak memory (VmHWM samples), the
 * battery's draw (current × voltage samples, meaningful only off the charger) and the thermal state. The samples are
 * written on the phone by {@link #SAMPLE}, a shell function a run script defines and calls with the tool's pid.
 */
final class PhoneReadings {
    private static final String[] THERMAL = {"none", "light", "moderate", "severe", "critical", "emergency", "shutdown"};

    /**
     * {@code sample PID NAME}: until process PID exits, appends its VmHWM to {@code NAME.hwm} and the battery's
     * current and voltage to {@code NAME.power} every 50 ms.
     */
    static final String SAMPLE = """
            sample() {
              while kill -0 "$1" 2>/dev/null; do
                grep VmHWM "/proc/$1/status" >> "$2.hwm" 2>/dev/null
                echo "$(cat /sys/class/power_supply/battery/current_now 2>/dev/null) $(cat /sys/class/power_supply/battery/voltage_now 2>/dev/null)" >> "$2.power"
                sleep 0.05
              done
            }
            """;

    private final Adb adb;
    private final Phone phone;

    PhoneReadings(Adb adb, Phone phone) {
        this.adb = adb;
        this.phone = phone;
    }

    String batteryStatus() {
        return adb.shell(phone.serial(), "cat /sys/class/power_supply/battery/status 2>/dev/null; true", 30).strip();
    }

    /** The largest VmHWM in the {@code .hwm} files, in bytes, or null when none was sampled. */
    Long peak(String... hwmFiles) {
        long max = -1;
        for (String line : adb.shell(phone.serial(), "cat " + String.join(" ", hwmFiles) + " 2>/dev/null; true", 60).split("\n")) {
            if (line.startsWith("VmHWM:")) {
                max = Math.max(max, Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024);
            }
        }
        return max < 0 ? null : max;
    }

    /** Joules a token from the mean battery draw sampled in {@code powerFile}, or null (with the reason) when not measurable. */
    Double energyPerToken(String powerFile, String batteryStatus, double secondsPerToken, Map<String, String> notAvailable) {
        if (batteryStatus.equalsIgnoreCase("Charging") || batteryStatus.equalsIgnoreCase("Full")) {
            notAvailable.put("energyPerToken", "the phone is " + batteryStatus.toLowerCase() + " over USB: its battery current does not show "
                    + "the SoC's draw (disable charging, e.g. `dumpsys battery unplug`, to measure)");
            return null;
        }
        double sum = 0;
        int n = 0;
        for (String line : adb.shell(phone.serial(), "cat " + powerFile + " 2>/dev/null; true", 60).split("\n")) {
            String[] f = line.strip().split("\\s+");
            if (f.length == 2 && f[0].matches("-?\\d+") && f[1].matches("\\d+")) {
                sum += Math.abs(Long.parseLong(f[0])) * 1e-6 * Long.parseLong(f[1]) * 1e-6; // µA × µV -> W
                n++;
            }
        }
        if (n == 0) {
            notAvailable.put("energyPerToken", "the phone exposes no battery current and voltage (/sys/class/power_supply/battery)");
            return null;
        }
        return sum / n * secondsPerToken;
    }

    /** {@code dumpsys thermalservice}'s status by name, or null when it printed none. */
    String thermal() {
        for (String line : adb.shell(phone.serial(), "dumpsys thermalservice 2>/dev/null; true", 60).split("\n")) {
            if (line.strip().startsWith("Thermal Status:")) {
                int s = Integer.parseInt(line.replaceAll("[^0-9]", ""));
                return s < THERMAL.length ? THERMAL[s] : String.valueOf(s);
            }
        }
        return null;
    }
}
