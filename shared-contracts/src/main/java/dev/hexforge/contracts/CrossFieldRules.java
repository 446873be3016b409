package dev.hexforge.contracts;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;

/**
 * The job spec's rules across fields, checked once every field is valid on its own: stage order and dependencies,
 * what a Genie bundle and its benchmark take, and the bit / group / format / activation combinations.
 */
final class CrossFieldRules {
    private CrossFieldRules() {
    }

    /** Rules across fields: model source, stage order and dependencies, bit/group/format combinations. */
    static void check(ObjectNode s, List<Problem> problems) {
        List<Stage> stages = new ArrayList<>();
        for (JsonNode n : s.path("stages")) {
            stages.add(Stage.parse(n.asText()));
        }
        if (stages.isEmpty()) {
            problems.add(new Problem("stages", "must name at least one stage"));
        }
        for (int i = 1; i < stages.size(); i++) {
            if (stages.get(i).ordinal() < stages.get(i - 1).ordinal()) {
                problems.add(new Problem("stages", "'" + stages.get(i).id() + "' must come before '" + stages.get(i - 1).id()
                        + "' (order: finetune, merge, quantize, export, compile, sign, benchmark)"));
            }
        }
        if (stages.contains(Stage.FINETUNE) && !s.path("finetune").has("data")) {
            problems.add(new Problem("finetune.data", "is required when the finetune stage runs"));
        }
        if (stages.contains(Stage.MERGE) && !stages.contains(Stage.FINETUNE)) {
            problems.add(new Problem("stages", "'merge' needs 'finetune' (there is no adapter to merge)"));
        }
        if (stages.contains(Stage.FINETUNE) && !stages.contains(Stage.MERGE)) {
            for (Stage later : List.of(Stage.QUANTIZE, Stage.EXPORT)) {
                if (stages.contains(later)) {
                    problems.add(new Problem("stages", "'" + later.id() + "' after 'finetune' needs 'merge' between them "
                            + "(it takes a full model, finetune makes an adapter)"));
                    break;
                }
            }
        }
        if (stages.contains(Stage.COMPILE) && !stages.contains(Stage.EXPORT)) {
            problems.add(new Problem("stages", "'compile' needs 'export'"));
        }
        if (stages.contains(Stage.BENCHMARK) && !stages.contains(Stage.EXPORT)) {
            problems.add(new Problem("stages", "'benchmark' needs 'export'"));
        }
        String variant = s.path("export").path("variant").asText();
        String target = s.path("compile").path("target").asText();
        if (stages.contains(Stage.BENCHMARK)) {
            List<String> backends = new ArrayList<>();
            s.path("benchmark").path("backends").forEach(b -> backends.add(b.asText()));
            boolean genieBundle = stages.contains(Stage.COMPILE) && "genie".equals(target);
            JsonNode b = s.path("benchmark");
            int ctx = s.path("export").path("ctx").asInt();
            int ar = s.path("export").path("seq").asInt();
            int dialog = b.path("promptLength").asInt() + b.path("newTokens").asInt();
            if (genieBundle && dialog > NpuLimits.genieDialogTokens(ctx, ar)) {
                problems.add(new Problem("benchmark.newTokens", "benchmark.promptLength " + b.path("promptLength").asInt()
                        + " + benchmark.newTokens " + b.path("newTokens").asInt() + " = " + dialog + " tokens exceed "
                        + NpuLimits.genieDialogLimit(ctx, ar) + ": lower them, or raise export.ctx"));
            }
            if (genieBundle && !backends.equals(List.of("genie"))) {
                problems.add(new Problem("benchmark.backends", "a Genie bundle runs on the genie backend only (genie-t2t-run on a "
                        + "phone): set benchmark.backends: [genie]"));
            } else if (!genieBundle && backends.contains("genie")) {
                problems.add(new Problem("benchmark.backends", "genie runs Genie bundles: it needs the compile stage with "
                        + "compile.target: genie"));
            }
        }
        JsonNode e = s.path("export");
        if ("genie".equals(variant)) {
            if (!NpuLimits.GENIE_PROMPT_LENGTHS.contains(e.path("seq").asInt())) {
                problems.add(new Problem("export.seq", "must be " + NpuLimits.GENIE_PROMPT_LENGTHS.stream().map(String::valueOf)
                        .collect(Collectors.joining(" or ")) + " for the genie variant (Genie's prompt graph, AR-N), got "
                        + e.path("seq").asInt()));
            }
            if (e.path("ctx").asInt() < NpuLimits.GENIE_MIN_CONTEXT) {
                problems.add(new Problem("export.ctx", "must be at least " + NpuLimits.GENIE_MIN_CONTEXT
                        + " for the genie variant, got " + e.path("ctx").asInt()));
            }
        }
        if (e.path("seq").asInt() >= e.path("ctx").asInt()) {
            problems.add(new Problem("export.seq", "must be smaller than export.ctx (" + e.path("ctx").asInt() + ")"));
        }
        JsonNode q = s.path("quantize");
        String activations = q.path("activations").asText();
        boolean quantizedActivations = activations.equals("16") || activations.equals("8")
                || activations.equals("auto") && !"dynamic".equals(variant) && !"matmulnbits".equals(q.path("format").asText());
        if (stages.contains(Stage.QUANTIZE) && quantizedActivations) {
            // the HTP runs no float op beside quantized activations (the quantize pass refuses the same)
            String why = " cannot run beside quantized activations on the HTP (quantize.activations: " + activations
                    + (activations.equals("auto") ? ", 16 for an NPU export" : "") + "); or set quantize.activations: float, "
                    + "or quantize.format: matmulnbits for the CPU";
            if ("keep".equals(q.path("head").asText())) {
                problems.add(new Problem("quantize.head", "keep: a float embedding and LM head" + why));
            }
            if (!q.path("keep").isEmpty()) {
                problems.add(new Problem("quantize.keep", "linears kept in float" + why));
            }
            if (q.path("auto").path("maxExtraBytesPercent").asDouble() > 0) {
                problems.add(new Problem("quantize.auto.maxExtraBytesPercent", "linears kept in float by the automatic mixed "
                        + "precision" + why));
            }
        }
        if (q.path("quantizeIo").asBoolean()) {
            if (!quantizedActivations) {
                problems.add(new Problem("quantize.quantizeIo", "quantized inputs and outputs need quantized activations "
                        + "(quantize.activations: 16 or 8 with a static export), not " + activations
                        + (activations.equals("auto") ? " with the " + variant + " variant" : "")));
            } else if ("genie".equals(variant)) {
                problems.add(new Problem("quantize.quantizeIo", "is for the static layout: the QNN converter gives Genie's "
                        + "graphs quantized inputs and outputs itself (metadata.json lists their encodings)"));
            } else if (stages.contains(Stage.COMPILE) && !"ort-qnn".equals(target)) {
                problems.add(new Problem("quantize.quantizeIo", "is the ort-qnn bundle's form; compile.target " + target
                        + " gets quantized inputs and outputs from the QNN converter itself"));
            }
        }
        int group = q.has("group") ? q.path("group").asInt() : JobSpec.Quantize.defaultGroup(q.path("bits").asInt());
        if (group > 0 && group < 8) {
            problems.add(new Problem("quantize.group", "must be 0 (per channel) or at least 8"));
        }
        if (stages.contains(Stage.QUANTIZE) && !"qdq".equals(q.path("format").asText())) {
            int bits = q.path("bits").asInt();
            if (bits != 4 && bits != 8) {
                problems.add(new Problem("quantize.format", "matmulnbits takes 4 or 8 bits, not " + bits + "; use qdq"));
            }
            if (group > 0 && (Integer.bitCount(group) != 1 || group < 16 || group > 256)) {
                problems.add(new Problem("quantize.group", "matmulnbits takes groups of 16, 32, 64, 128 or 256, not " + group));
            }
        }
    }
}
