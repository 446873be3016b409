package dev.hexforge.compile;

import java.util.List;
import java.util.Locale;
import java.util.Optional;

/**
 * A Snapdragon SoC by its chipset name, with its Hexagon (HTP) architecture, the numeric SoC model id the QNN
 * HTP backend's device configuration takes (0 when not known: the config then names the architecture only), and the
 * peak memory bandwidth of its DRAM interface from the spec sheet (bytes/s; 0 when not known) — the roofline a
 * phone's decode is measured against, since a phone offers no way to run a bandwidth test beside the NPU.
 */
public record Soc(String name, String marketing, int htpArch, int qnnSocModel, double memoryBandwidth) {
    public static final List<Soc> KNOWN = List.of(
            new Soc("SM8450", "Snapdragon 8 Gen 1", 69, 36, 51.2e9),    // LPDDR5-6400, 64-bit
            new Soc("SM8550", "Snapdragon 8 Gen 2", 73, 43, 67.2e9),    // LPDDR5X-8400, 64-bit
            new Soc("SM8650", "Snapdragon 8 Gen 3", 75, 57, 76.8e9),    // LPDDR5X-9600, 64-bit
            new Soc("SM8750", "Snapdragon 8 Elite", 79, 69, 85.3e9),    // LPDDR5X-10667, 64-bit
            new Soc("SC8380XP", "Snapdragon X Elite", 73, 60, 135.0e9)); // LPDDR5X-8448, 128-bit

    /** The known SoC with this chipset name (case-insensitive). */
    public static Optional<Soc> find(String name) {
        return KNOWN.stream().filter(s -> s.name.equalsIgnoreCase(name)).findFirst();
    }

    /**
     * The SoC named (chipset name, case-insensitive); an unknown one needs its HTP architecture given.
     *
     * @param htpArch 0 when not given
     */
    public static Soc resolve(String name, int htpArch) {
        Soc s = find(name).orElse(null);
        if (s != null) {
            if (htpArch != 0 && htpArch != s.htpArch) {
                throw new CompileException("soc " + s.name + " (" + s.marketing + ") has HTP v" + s.htpArch + ", not v" + htpArch,
                        "leave compile.htpArch out, or name the SoC that has v" + htpArch);
            }
            return s;
        }
        if (htpArch == 0) {
            throw new CompileException("unknown soc '" + name + "' and no compile.htpArch given", "use one of "
                    + KNOWN.stream().map(k -> k.name + " (" + k.marketing + ")").toList() + " or give compile.htpArch");
        }
        return new Soc(name.toUpperCase(Locale.ROOT), name, htpArch, 0, 0);
    }
}
