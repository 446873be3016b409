package dev.hexforge.compile;

import java.util.List;
import java.util.Locale;
import java.util.Optional;

/**
 * A Snapdragon SoC by its chipset name, with its Hexagon (HTP) architecture, the numeric SoC model id the QNN
 * HTP backend's device configuration takes (0 when not known: the config then names the architecture only), the
 * HTP's VTCM (its tightly coupled memory, in MB; 0 when not known) and the peak memory bandwidth of its DRAM interface
 * from the spec sheet (bytes/s; 0 when not known) — the roofline a phone's decode is measured against, since a phone
 * offers no way to run a bandwidth test beside the NPU.
 *
 * <p>Sources: the HTP architecture, SoC model id and VTCM of the phone SoCs are those of the Qualcomm-maintained
 * ExecuTorch backend ({@code backends/qualcomm/serialization/qc_schema.py}, {@code QcomChipset} and its SoC table);
 * the X Elite's architecture and id those Microsoft Olive documents for its QNN pass ({@code dsp_arch:v73;soc_model:60});
 * the bandwidths the memory each SoC's product brief lists (type, speed, a 64-bit bus on the phones, 128-bit on the
 * X Elite).
 */
public record Soc(String name, String marketing, int htpArch, int qnnSocModel, int vtcmMb, double memoryBandwidth) {
    public static final List<Soc> KNOWN = List.of(
            new Soc("SM8450", "Snapdragon 8 Gen 1", 69, 36, 8, 51.2e9),       // LPDDR5-6400, 64-bit
            new Soc("SM8550", "Snapdragon 8 Gen 2", 73, 43, 8, 67.2e9),       // LPDDR5X-8400, 64-bit
            new Soc("SM8650", "Snapdragon 8 Gen 3", 75, 57, 8, 76.8e9),       // LPDDR5X-9600, 64-bit
            new Soc("SM8750", "Snapdragon 8 Elite", 79, 69, 8, 85.3e9),       // LPDDR5X-10667, 64-bit
            new Soc("SM8850", "Snapdragon 8 Elite Gen 5", 81, 87, 8, 85.3e9), // LPDDR5X at 5.3 GHz (10667), 64-bit
            new Soc("SC8380XP", "Snapdragon X Elite", 73, 60, 0, 135.0e9));   // LPDDR5X-8448, 128-bit

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
        return new Soc(name.toUpperCase(Locale.ROOT), name, htpArch, 0, 0, 0);
    }
}
