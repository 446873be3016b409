package dev.hexforge.compile;

import dev.hexforge.compile.genie.GenieConfig;

/**
 * What to build for: the SoC (chipset name), its HTP architecture (0: from the SoC table), the HTP performance mode
 * the bundle asks the runtime for, the weight bit width the QNN converter uses where no encoding gives one (the
 * activations' come from the export's precision), and how a Genie bundle samples.
 */
public record CompileOptions(String soc, int htpArch, String performanceMode, int weightBits, GenieConfig.Sampler sampler) {
    public static CompileOptions of(String soc, int htpArch) {
        return of(soc, htpArch, GenieConfig.Sampler.DEFAULT);
    }

    public static CompileOptions of(String soc, int htpArch, GenieConfig.Sampler sampler) {
        return new CompileOptions(soc, htpArch, "burst", 8, sampler);
    }
}
