package dev.hexforge.compile;

/**
 * What to build for: the SoC (chipset name), its HTP architecture (0: from the SoC table), the HTP performance mode
 * the bundle asks the runtime for, and the weight bit width the QNN converter uses where no encoding gives one (the
 * activations' come from the export's precision).
 */
public record CompileOptions(String soc, int htpArch, String performanceMode, int weightBits) {
    public static CompileOptions of(String soc, int htpArch) {
        return new CompileOptions(soc, htpArch, "burst", 8);
    }
}
