package dev.hexforge.compile;

import dev.hexforge.contracts.ErrorCode;

import java.util.Map;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Turns what a QNN tool, or Genie loading a bundle on a phone, printed when it failed into a cause and a fix:
 * unsupported operators (which node, and what to export instead), dynamic shapes (6036: the input to fix), memory
 * (1002, and VTCM: split or shorten), context errors (5000: the phone's QAIRT older than the compiling one; 5005: built
 * for another SoC), graph finalisation (6021/6022).
 */
public final class QnnTriage {
    /** What failed and what to do. */
    public record Diagnosis(ErrorCode code, String cause, String fix) {
    }

    private static final Map<String, String> REPLACEMENTS = Map.of(
            "Erf", "export GELU with the tanh approximation (Tanh, Mul, Add)",
            "Einsum", "export the contraction as MatMul with Transpose/Reshape",
            "Loop", "unroll the loop at export; HTP runs no control flow",
            "If", "resolve the branch at export; HTP runs no control flow",
            "NonZero", "use a static mask instead of data-dependent shapes",
            "ScatterND", "write the KV cache update as Concat/Slice of fixed shapes",
            "CumSum", "feed precomputed position ids as an input");
    private static final Pattern UNSUPPORTED = Pattern.compile(
            "(?i)(?:node|op)\\s+'?([\\w./:-]+)'?\\s*\\(?\\s*(?:of\\s+)?(?:type\\s+)?'?(\\w+)'?\\)?[^\\n]*?(?:not supported|unsupported|validation failed)");
    private static final Pattern DYNAMIC = Pattern.compile("(?i)(?:6036|dynamic)[^\\n]*?\\binput\\s+'?([\\w./:-]+)'?");
    private static final Pattern CODE = Pattern.compile("(?i)(?:error(?:\\s+code)?|status)[:=\\s]+(\\d{4})");
    private static final Pattern VTCM = Pattern.compile("(?i)\\bvtcm\\b[^\\n]*(?:alloc|insufficient|exceed|not enough|fail)"
            + "|(?:alloc|insufficient|exceed|not enough|fail)[^\\n]*\\bvtcm\\b");

    private QnnTriage() {
    }

    public static Optional<Diagnosis> explain(String log) {
        Matcher m = UNSUPPORTED.matcher(log);
        if (m.find()) {
            String node = m.group(1);
            String op = m.group(2);
            return Optional.of(new Diagnosis(ErrorCode.QNN_UNSUPPORTED_OP, "node '" + node + "' (op " + op + ") is not supported by the HTP backend",
                    REPLACEMENTS.getOrDefault(op, "replace the " + op + " op with HTP-supported ops at export, or keep that part on the CPU "
                            + "with another target")));
        }
        Matcher d = DYNAMIC.matcher(log);
        if (d.find()) {
            return Optional.of(new Diagnosis(ErrorCode.QNN_DYNAMIC_SHAPE, "input '" + d.group(1) + "' has a dynamic shape (QNN error 6036)",
                    "fix its shape with --input_dim " + d.group(1) + " <dims> (the static export fixes every input; export.variant: static)"));
        }
        if (VTCM.matcher(log).find()) {
            return Optional.of(new Diagnosis(ErrorCode.QNN_OUT_OF_MEMORY, "the graph needs more of the HTP's "
                    + "tightly coupled memory (VTCM) than the device has", "export a shorter prompt graph (export.seq 64) or more, "
                    + "smaller parts; compile for the device's SoC (compile.soc), whose VTCM size the compiler then plans for"));
        }
        Matcher c = CODE.matcher(log);
        while (c.find()) {
            String code = c.group(1);
            switch (code) {
                case "1002" -> {
                    return Optional.of(new Diagnosis(ErrorCode.QNN_OUT_OF_MEMORY, "the device ran out of memory allocating the graph (QNN error 1002)",
                            "split the model into more parts, or lower export.ctx"));
                }
                case "5000" -> {
                    return Optional.of(new Diagnosis(ErrorCode.QNN_CONTEXT_MISMATCH, "the context binary does not match "
                            + "the runtime that loads it (QNN error 5000): the phone's QAIRT is older than the SDK that compiled it",
                            "put a QAIRT runtime on the phone at least as new as the bundle's (metadata.json's tools.qairt), or compile "
                                    + "with the SDK version of the phone's runtime"));
                }
                case "5005" -> {
                    return Optional.of(new Diagnosis(ErrorCode.QNN_CONTEXT_MISMATCH, "the context binary was built "
                            + "for another device (QNN error 5005): its SoC or Hexagon architecture is not this phone's",
                            "compile for the phone's SoC (compile.soc, e.g. SM8650 for Snapdragon 8 Gen 3)"));
                }
                case "6021", "6022" -> {
                    return Optional.of(new Diagnosis(ErrorCode.QNN_GRAPH_FINALIZE, "the HTP backend could not optimise or finalise the graph (QNN error "
                            + code + ")", "try another htp_graph_finalization_optimization_mode, or a newer QNN SDK"));
                }
                case "6004" -> {
                    return Optional.of(new Diagnosis(ErrorCode.QNN_INVALID_TENSOR, "a tensor is invalid for the backend (QNN error 6004)",
                            "check its data type: HTP takes uint8/uint16 activations and int8/uint8/int4 weights"));
                }
                default -> {
                }
            }
        }
        return Optional.empty();
    }
}
