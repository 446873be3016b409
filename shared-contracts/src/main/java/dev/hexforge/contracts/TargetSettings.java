package dev.hexforge.contracts;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.IntNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.TextNode;

import java.util.ArrayList;
import java.util.List;

/**
 * The settings a job's target decides. A job spec that names {@code compile.target} (or runs the compile stage) and
 * leaves a setting out gets the one the target needs: the stages that make it, the graph layout, the weights' grouping
 * and the activations' precision; a setting given that the target cannot take is a problem naming both fields. The
 * rules are the target's, so the fleet, the dashboard and every CLI command fill the same values.
 */
public final class TargetSettings {
    /** The CPU target: ONNX Runtime runs the MatMulNBits export as it is, with nothing to compile. */
    public static final String ORT_CPU = "ort-cpu";
    static final String ORT_QNN = "ort-qnn";
    static final String GENIE = "genie";
    /** The targets that run the QNN SDK's converter, which reads the weights' encodings per channel only. */
    static final List<String> QNN_SDK = List.of("qnn-context-binary", "qnn-model-lib", GENIE);
    private static final JsonNodeFactory NODES = JsonNodeFactory.instance;

    /** A setting a job spec left out, the value the target gives it and why. */
    public record Derived(String field, String value, String because) {
        @Override
        public String toString() {
            return field + ": " + value + " (" + because + ")";
        }
    }

    private TargetSettings() {
    }

    /** What {@code doc} (a job spec as submitted) leaves to its target, without changing it. */
    public static List<Derived> derived(JsonNode doc) {
        if (doc == null || !doc.isObject()) {
            return List.of();
        }
        return apply(((ObjectNode) doc).deepCopy(), new ArrayList<>());
    }

    /** Fills what the target decides into {@code doc} (changed in place) and adds the problems of what it cannot take. */
    static List<Derived> apply(ObjectNode doc, List<Problem> problems) {
        List<Derived> out = new ArrayList<>();
        JsonNode given = doc.path("compile").path("target");
        String target = given.isTextual() ? given.asText() : null;
        if (target != null && !doc.hasNonNull("stages") && JobSpecSchema.field("compile.target").allowed().contains(target)) {
            List<String> stages = target.equals(ORT_CPU) ? List.of("quantize", "export", "sign")
                    : List.of("quantize", "export", "compile", "sign");
            ArrayNode a = doc.putArray("stages");
            stages.forEach(a::add);
            out.add(new Derived("stages", String.join(", ", stages), "what compile.target " + target + " is made by"));
        }
        List<String> stages = new ArrayList<>();
        doc.path("stages").forEach(s -> stages.add(s.asText()));
        boolean compiles = stages.contains(Stage.COMPILE.id());
        if (target == null && compiles) {
            target = ORT_QNN;
        }
        if (target == null || !doc.path("compile").isObject() && doc.has("compile")) {
            return out;
        }
        if (target.equals(ORT_CPU)) {
            if (compiles) {
                problems.add(new Problem("stages", "'compile' has nothing to do for compile.target ort-cpu (ONNX Runtime runs "
                        + "the export on the CPU as it is): leave it out"));
            }
            fill(doc, "export.variant", TextNode.valueOf("dynamic"), "the CPU runs the Hugging Face layout at any length", out);
            fill(doc, "quantize.format", TextNode.valueOf("matmulnbits"), "ONNX Runtime's CPU kernels for 4- and 8-bit weights", out);
            return out;
        }
        // what was given is held to the target where it is made for it: a compile stage, or a target named outright
        boolean held = compiles || given.isTextual();
        boolean quantizes = held && stages.contains(Stage.QUANTIZE.id());
        String layout = target.equals(GENIE) ? GENIE : "static";
        fill(doc, "export.variant", TextNode.valueOf(layout),
                target.equals(GENIE) ? "Genie's graph layout" : "the NPU runs fixed shapes", out);
        fill(doc, "quantize.format", TextNode.valueOf("qdq"), "the NPU compiles QDQ graphs", out);
        fill(doc, "quantize.activations", TextNode.valueOf("16"), "the HTP runs uint16 activations, as AI Hub's w8a16 / w4a16", out);
        String variant = doc.path("export").path("variant").asText();
        if (held && !variant.equals(layout)) {
            problems.add(new Problem("export.variant", "compile.target " + target + " needs export.variant: " + layout
                    + (target.equals(GENIE) ? " (Genie's graph layout)" : variant.equals(GENIE)
                    ? " (genie is the layout of compile.target genie)" : " (the NPU runs fixed shapes)") + ", not " + variant));
        }
        JsonNode q = doc.path("quantize");
        if (quantizes && q.path("format").asText().equals("matmulnbits")) {
            problems.add(new Problem("quantize.format", "matmulnbits is ONNX Runtime's CPU format; compile.target " + target
                    + " compiles QDQ graphs: set quantize.format: qdq, or compile.target: ort-cpu"));
        }
        if (QNN_SDK.contains(target)) {
            String why = "the QNN converter's encodings hold weights per channel";
            fill(doc, "quantize.group", IntNode.valueOf(0), why, out);
            JsonNode group = q.path("group");
            if (quantizes && group.isIntegralNumber() && group.asInt() > 0) {
                problems.add(new Problem("quantize.group", "compile.target " + target + " takes weights per channel "
                        + "(quantize.group: 0), not in groups of " + group.asInt() + ": " + why + " (AIMET encodings 0.5.0); "
                        + "or compile.target: ort-qnn"));
            }
            if (quantizes && q.path("activations").asText().equals("float")) {
                problems.add(new Problem("quantize.activations", "compile.target " + target + " needs quantized activations "
                        + "(the QNN converter takes every activation's encoding): set quantize.activations: 16 or 8"));
            }
            if (quantizes && q.path("head").asText().equals("int4")) {
                problems.add(new Problem("quantize.head", "compile.target " + target + " takes an int8 embedding and head: "
                        + "int4 is in groups, and " + why));
            }
        }
        return out;
    }

    /** Sets {@code dotted} to {@code value} where the document leaves it out (a null counts as left out). */
    private static void fill(ObjectNode doc, String dotted, JsonNode value, String because, List<Derived> out) {
        String[] path = dotted.split("\\.");
        ObjectNode at = doc;
        for (int i = 0; i < path.length - 1; i++) {
            JsonNode next = at.get(path[i]);
            if (next == null || next.isNull()) {
                next = at.putObject(path[i]);
            } else if (!next.isObject()) {
                return; // the schema reports it
            }
            at = (ObjectNode) next;
        }
        String name = path[path.length - 1];
        if (at.hasNonNull(name)) {
            return;
        }
        at.set(name, value);
        out.add(new Derived(dotted, value.asText(), because));
    }
}
