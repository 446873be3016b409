package dev.hexforge.compile;

/**
 * What to build for: the SoC (chipset name), its HTP architecture (0: from the SoC table), the HTP performance mode
 * the bundle asks the runtime for, and the activation / weight bit widths the QNN converter uses.
 */
public record CompileOptions(String soc, int htpArch, String performanceMode, int activationBits, int weightBits) {
    public static CompileOptions of(String soc, int htpArch) {
        return new CompileOptions(soc, htpArch, "burst", 16, 8);
    }
}
