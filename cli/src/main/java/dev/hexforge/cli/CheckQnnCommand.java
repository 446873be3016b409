package dev.hexforge.cli;

import dev.hexforge.onnx.export.ExportInfo;
import dev.hexforge.onnx.qnn.Precision;
import dev.hexforge.onnx.qnn.QnnPreflight;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;

@Command(name = "check-qnn", mixinStandardHelpOptions = true,
        description = "QNN HTP pre-flight: ops (and which take 16-bit activations), dynamic dimensions, element types, per-graph weight memory. Exit 0 only when clean.")
final class CheckQnnCommand implements Callable<Integer> {
    @Parameters(index = "0", description = "an .onnx file, or an export folder (every graph in it is checked)")
    Path target;
    @Option(names = "--json", description = "print one JSON object")
    boolean json;
    @Option(names = "--precision", description = "also hold the graphs to a target precision: w8a16, w4a16, w8a8 (every "
            + "activation quantized, as the HTP runs them) or w8, w4 (weights only); default for an export folder: the "
            + "precision its export.json records")
    String precision;

    @Override
    public Integer call() {
        List<Path> graphs = new ArrayList<>();
        Precision recorded = null;
        if (Files.isDirectory(target)) {
            ExportInfo info = ExportInfo.read(target);
            info.graphs().keySet().forEach(role -> graphs.add(info.graph(target, role)));
            recorded = Precision.recorded(info.precision());
        } else if (Files.isRegularFile(target)) {
            graphs.add(target);
        } else {
            throw new IllegalArgumentException(target + " does not exist");
        }
        Precision target = precision != null ? Precision.parse(precision) : recorded;
        boolean clean = true;
        List<Map<String, Object>> reports = new ArrayList<>();
        for (Path g : graphs) {
            QnnPreflight.Report r = QnnPreflight.check(g, target);
            clean &= r.clean();
            if (json) {
                reports.add(new Json().put("graph", r.graph()).put("clean", r.clean()).put("ops", r.ops())
                        .put("dynamic_dimensions", r.dynamicDimensions()).put("unsupported_types", r.unsupportedTypes())
                        .put("weight_bytes", r.weightBytes()).put("weight_limit_bytes", r.weightLimitBytes())
                        .put("precision", r.precision() == null ? null : r.precision().id())
                        .put("float_activations", r.floatActivations())
                        .put("problems", r.problems()).fields());
            } else {
                print(r);
            }
        }
        if (json) {
            new Json().put("clean", clean).put("graphs", reports).print();
        }
        return clean ? 0 : 1;
    }

    private static void print(QnnPreflight.Report r) {
        System.out.println("graph " + r.graph() + ": " + (r.clean() ? "CLEAN" : "NOT READY FOR HTP"));
        for (QnnPreflight.OpUse o : r.ops()) {
            String note = !o.supported() ? "not supported on HTP"
                    : o.lacks16Bit() ? o.sixteenBitUses() + " with 16-bit activations: the HTP has no 16-bit form"
                    : o.sixteenBitUses() > 0 ? o.sixteenBitUses() + " with 16-bit activations" : "";
            System.out.printf("  %-4s %-24s x%-4d %s%n", o.supported() && !o.lacks16Bit() ? "ok" : "FAIL",
                    (o.domain().isEmpty() ? "" : o.domain() + ".") + o.opType(), o.count(), note);
        }
        r.dynamicDimensions().forEach(d -> System.out.println("  dynamic: " + d));
        r.unsupportedTypes().forEach(t -> System.out.println("  dtype:   " + t));
        System.out.printf("  weights: %.1f MiB of %.0f MiB per-graph limit%n", r.weightBytes() / 1048576.0, r.weightLimitBytes() / 1048576.0);
        if (r.precision() != null && r.precision().quantizesActivations()) {
            System.out.println(r.floatActivations().isEmpty() ? "  " + r.precision().id() + ": every activation is quantized"
                    : "  " + r.precision().id() + ": " + r.floatActivations().size() + " float activations (first: "
                    + String.join(", ", r.floatActivations().subList(0, Math.min(5, r.floatActivations().size())))
                    + "): the HTP runs this graph in fp16 with 16-bit weights, or fails to load with CPU fallback disabled");
        }
    }
}
