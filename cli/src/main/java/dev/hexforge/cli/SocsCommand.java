package dev.hexforge.cli;

import dev.hexforge.compile.Soc;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

import java.util.Locale;
import java.util.concurrent.Callable;

@Command(name = "socs", mixinStandardHelpOptions = true,
        description = "The Snapdragon SoCs compile --soc knows: HTP architecture, QNN SoC model id, VTCM and memory bandwidth.")
final class SocsCommand implements Callable<Integer> {
    @Option(names = "--json", description = "print one JSON array instead of a table")
    boolean json;

    @Override
    public Integer call() {
        if (json) {
            System.out.println(Json.MAPPER.valueToTree(Soc.KNOWN).toPrettyString());
            return 0;
        }
        System.out.printf(Locale.ROOT, "%-9s %-25s %-5s %-10s %-8s %s%n", "soc", "marketing name", "HTP", "QNN model", "VTCM",
                "memory bandwidth");
        for (Soc s : Soc.KNOWN) {
            System.out.printf(Locale.ROOT, "%-9s %-25s v%-4d %-10d %-8s %s%n", s.name(), s.marketing(), s.htpArch(),
                    s.qnnSocModel(), s.vtcmMb() > 0 ? s.vtcmMb() + " MB" : "-",
                    s.memoryBandwidth() > 0 ? String.format(Locale.ROOT, "%.1f GB/s", s.memoryBandwidth() / 1e9) : "-");
        }
        System.out.println("another SoC: compile --soc NAME --htp-arch N (its QNN model id and VTCM are then left to the SDK)");
        return 0;
    }
}
