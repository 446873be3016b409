package dev.hexforge.compile;

import java.util.List;
import java.util.Locale;

/**
 * A Snapdragon SoC by its chipset name, with its Hexagon (HTP) architecture and the numeric SoC model id the QNN
 * HTP backend's device configuration takes (0 when not known: the config then names the architecture only).
 */
public record Soc(String name, String marketing, int htpArch, int qnnSocModel) {
    public static final List<Soc> KNOWN = List.of(
            new Soc("SM8450", "Snapdragon 8 Gen 1", 69, 36),
            new Soc("SM8550", "Snapdragon 8 Gen 2", 73, 43),
            new Soc("SM8650", "Snapdragon 8 Gen 3", 75, 57),
            new Soc("SM8750", "Snapdragon 8 Elite", 79, 69),
            new Soc("SC8380XP", "Snapdragon X Elite", 73, 60));

    /**
     * The SoC named (chipset name, case-insensitive); an unknown one needs its HTP architecture given.
     *
     * @param htpArch 0 when not given
     */
    public static Soc resolve(String name, int htpArch) {
        for (Soc s : KNOWN) {
            if (s.name.equalsIgnoreCase(name)) {
                if (htpArch != 0 && htpArch != s.htpArch) {
                    throw new CompileException("soc " + s.name + " (" + s.marketing + ") has HTP v" + s.htpArch + ", not v" + htpArch,
                            "leave compile.htpArch out, or name the SoC that has v" + htpArch);
                }
                return s;
            }
        }
        if (htpArch == 0) {
            throw new CompileException("unknown soc '" + name + "' and no compile.htpArch given", "use one of "
                    + KNOWN.stream().map(s -> s.name + " (" + s.marketing + ")").toList() + " or give compile.htpArch");
        }
        return new Soc(name.toUpperCase(Locale.ROOT), name, htpArch, 0);
    }
}
