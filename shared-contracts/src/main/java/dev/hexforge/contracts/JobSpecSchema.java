package dev.hexforge.contracts;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.TextNode;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

import static dev.hexforge.contracts.FieldSpec.bool;
import static dev.hexforge.contracts.FieldSpec.input;
import static dev.hexforge.contracts.FieldSpec.integer;
import static dev.hexforge.contracts.FieldSpec.integerOneOf;
import static dev.hexforge.contracts.FieldSpec.matching;
import static dev.hexforge.contracts.FieldSpec.number;
import static dev.hexforge.contracts.FieldSpec.object;
import static dev.hexforge.contracts.FieldSpec.oneOf;
import static dev.hexforge.contracts.FieldSpec.string;
import static dev.hexforge.contracts.FieldSpec.strings;

/**
 * The job spec, version 1: every field with its type, default (the seed pipeline's values) and limits. Validation
 * walks a submitted document against it, collects every problem with its path, and fills in the defaults.
 */
public final class JobSpecSchema {
    public static final int VERSION = 1;
    /** Most items of a list field. */
    public static final int MAX_LIST = 100;
    static final String ID_PATTERN = "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}";
    private static final JsonNodeFactory NODES = JsonNodeFactory.instance;
    /** Turns default values into nodes; one shared mapper, whose serializer cache a fresh one per value would rebuild. */
    private static final ObjectMapper VALUES = new ObjectMapper();

    public static final FieldSpec ROOT = object("", "A Hexforge conversion job.",
            integer("schemaVersion", VERSION, VERSION, VERSION, "Version of this document format."),
            string("name", null, "A label for the job (default: the model's name); at most 200 printable characters."),
            input("model", "The base model (a Hugging Face folder): {upload: ID} of a model archive uploaded to the fleet "
                    + "(POST /api/v1/uploads), {artifact: ID} of a model one of your jobs made, or {path: P} (or P alone) of a "
                    + "folder under the fleet's input roots (hexforge.input-roots; none by default).",
                    "upload", "artifact", "path").asRequired(),
            bool("allowNonFinite", false, "Go on with a model whose weights hold NaN or Inf values, saying so in the reports "
                    + "(refused by default, naming the tensors: such a model computes NaN)."),
            strings("stages", List.of("export", "sign"), "Stages to run, in pipeline order.",
                    "finetune", "merge", "quantize", "export", "compile", "sign", "benchmark"),
            object("finetune", "LoRA fine-tuning (the seed's PEFT settings).",
                    input("data", "The training data (Alpaca JSON/JSONL, chat JSONL or text): {upload: ID} of a data file "
                            + "uploaded to the fleet, or {path: P} (or P alone) of a file under its input roots.", "upload", "path"),
                    input("evalData", "Evaluation data, named like data (default: a split of data).", "upload", "path"),
                    integer("r", 8, 1, 256, "LoRA rank."),
                    number("alpha", 16, 0.0001, 10000, "LoRA alpha (scale = alpha / r)."),
                    number("dropout", 0.05, 0, 0.9, "Dropout on the LoRA input."),
                    strings("targets", List.of("q_proj", "k_proj", "v_proj", "o_proj"), "Linears that get adapters.",
                            "q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"),
                    integer("batch", 4, 1, 1024, "Examples per micro-batch."),
                    integer("accumulation", 8, 1, 1024, "Micro-batches per optimizer step."),
                    number("learningRate", 2e-4, 1e-8, 1, "Peak learning rate (AdamW)."),
                    integer("epochs", 3, 1, 1000, "Passes over the training data."),
                    integer("maxLength", 256, 8, 32768, "Tokens per example; longer ones are truncated."),
                    integer("seed", 0, 0, Long.MAX_VALUE, "Seed for initialisation, shuffling and dropout."),
                    oneOf("chatFormat", "auto", "How instructions and chats become token sequences: auto (as the model's "
                            + "tokenizer files say), chatml (Qwen2, Qwen3) or llama3 (Llama 3's header format).",
                            "auto", "chatml", "llama3")),
            object("quantize", "Weight quantization and its accuracy gate.",
                    oneOf("method", "rtn", "rtn (round to nearest: seconds, near-lossless at 8 bits), awq or gptq "
                            + "(calibrated: better at 4 bits).", "rtn", "awq", "gptq"),
                    integer("bits", 8, 2, 8, "Weight bits."),
                    integer("group", 0, 8192, "Input columns per scale; 0 for per channel (default: 0 at 8 bits, 128 below)."),
                    bool("symmetric", "Symmetric (no zero point) (default: true at 8 bits per channel, the NPU's INT8 weights; "
                            + "false otherwise)."),
                    input("calibration", "Calibration JSONL, named like finetune.data (default: the bundled set).", "upload", "path"),
                    integer("calibrationSamples", 128, 1, 100000, "Calibration samples."),
                    integer("calibrationLength", 512, 2, 32768, "Tokens per calibration sample."),
                    strings("keep", List.of(), "Module patterns kept in float, e.g. q_proj."),
                    oneOf("head", JobSpec.Quantize.DEFAULT_HEAD, "Token embedding and LM head (one tensor when tied): int8 (per channel, "
                            + "symmetric), int4 (the 4-bit rule: groups of 128 with zero points) or keep (float).", "int8", "int4", "keep"),
                    object("auto", "Automatic mixed precision: keep the most sensitive linears in FP16.",
                            number("maxExtraBytesPercent", 0, 0, 1000,
                                    "Extra bytes allowed for float layers, in percent of the quantized linears (0: off).")),
                    oneOf("format", "qdq", "qdq (NPU), matmulnbits (CPU) or both.", "qdq", "matmulnbits", "both"),
                    integer("accuracyLevel", 4, 0, 4, "MatMulNBits compute on the CPU (ONNX Runtime's accuracy_level): 4 = int8 "
                            + "activations, the fast path; 0 = float32, identical to the fake-quantized reference."),
                    integer("evalTokens", JobSpec.Quantize.DEFAULT_EVAL_TOKENS, 2, 10_000_000, "Gate: tokens of the evaluation text "
                            + "scored (its first windows of 128), on the float and the quantized model as ONNX Runtime runs them."),
                    number("maxDeltaPpl", 0.5, 0, 1e9, "Gate: largest allowed perplexity rise."),
                    oneOf("activations", JobSpec.Quantize.DEFAULT_ACTIVATIONS, "The static graph's activations: 16 (uint16, "
                            + "the HTP's w8a16 / w4a16), 8 (uint8: w8a8), float (weights only: the HTP would run it in fp16); "
                            + "auto is 16 for a static QDQ export and float for a dynamic or a MatMulNBits (CPU) one. Quantized activations are "
                            + "calibrated on quantize.calibration and gated on the fully quantized graph.",
                            "auto", "16", "8", "float"),
                    integerOneOf("kvBits", 8, "KV cache bits when activations are quantized: 8 (as AI Hub ships) or 16.", 8, 16),
                    bool("quantizeIo", false, "The static graphs' inputs and outputs in their quantized types (AI Hub's "
                            + "--quantize_io): the mask, KV cache, hidden states between parts and logits cross the graph as "
                            + "uint16 / uint8 at their encodings, which the bundle's manifest lists. Needs quantized "
                            + "activations and the static layout.")),
            object("export", "ONNX export.",
                    oneOf("variant", "static", "static (NPU graphs), dynamic (Hugging Face convention) or genie (NPU graphs in the "
                            + "layout Qualcomm's Genie runtime loads, for compile.target genie: seq 64 or 128, ctx at least 512).",
                            "static", "dynamic", "genie"),
                    integer("opset", 17, 17, 21, "ONNX opset (21 is used where INT4 needs it)."),
                    integer("seq", 128, 1, 4096, "Static prompt-graph length."),
                    integer("ctx", 512, 2, 4096, "Static context length."),
                    integer("maxGraphMb", JobSpec.Export.DEFAULT_MAX_GRAPH_MB, 16, JobSpec.Export.DEFAULT_MAX_GRAPH_MB,
                            "The most weights one NPU graph holds, in MiB (the HTP's limit is 2048): a static or Genie export over it is cut by layers into parts; lower gives more, smaller parts.")),
            object("compile", "NPU compilation.",
                    oneOf("target", "ort-qnn", "ort-qnn, qnn-context-binary, qnn-model-lib or genie (a Genie bundle: one weight-shared "
                            + "context binary per part and genie_config.json). All but ort-qnn run the QNN SDK's tools. ort-cpu is "
                            + "the CPU's: a MatMulNBits export with nothing to compile. A job that names a target and leaves out "
                            + "stages, export.variant, quantize.format, quantize.group or quantize.activations gets the ones the "
                            + "target needs.",
                            "ort-qnn", "qnn-context-binary", "qnn-model-lib", "genie", "ort-cpu"),
                    matching("soc", "SM8650", "[A-Za-z0-9_-]{1,32}", 32, "Target chipset (e.g. SM8650 = Snapdragon 8 Gen 3)."),
                    integer("htpArch", 0, 0, 99, "Hexagon HTP architecture; 0 takes it from the SoC (v75 for SM8650), give it for a SoC Hexforge does not know."),
                    object("sampler", "How a Genie bundle samples (its genie_config.json).",
                            integer("seed", 42, 0, 4_294_967_295L, "Sampler seed."),
                            number("temperature", 0.8, 0, 100, "Sampling temperature."),
                            integer("topK", 40, 1, 1_000_000, "Top-k: the most likely tokens sampled from."),
                            number("topP", 0.95, 0.001, 1, "Top-p: the probability mass sampled from."))),
            object("sign", "Signing of stored artifacts.",
                    bool("provenance", true, "Attach a signed provenance statement.")),
            object("benchmark", "On-device benchmark.",
                    matching("device", null, "[A-Za-z0-9._-]{1,100}", 100, "Device name or chipset to run on (default: any capable runner)."),
                    strings("backends", List.of("ort-cpu"), "Backends to measure: ort-cpu, ort-qnn (ONNX Runtime on the CPU or the QNN EP), "
                            + "adb-qnn (a phone running a qnn-context-binary bundle with qnn-net-run) or genie (a phone running a Genie "
                            + "bundle with genie-t2t-run).", "ort-cpu", "ort-qnn", "adb-qnn", "genie"),
                    integer("promptLength", 128, 1, 4096, "Prompt tokens."),
                    integer("newTokens", 64, 1, 4096, "Decoded tokens.")));

    /**
     * What validation needs of each declared field, worked out once: its default as a node, its pattern compiled and,
     * for an object, its fields' names. Keyed by identity: a record's hash would walk the whole declaration.
     */
    private record Compiled(JsonNode defaultNode, Pattern pattern, Set<String> names) {
    }

    private static final Pattern ID = Pattern.compile(ID_PATTERN);
    private static final Map<FieldSpec, Compiled> COMPILED = compile(ROOT, new IdentityHashMap<>());

    private static Map<FieldSpec, Compiled> compile(FieldSpec f, Map<FieldSpec, Compiled> into) {
        Set<String> names = new HashSet<>();
        if (f.fields() != null) {
            for (FieldSpec c : f.fields()) {
                names.add(c.name());
                compile(c, into);
            }
        }
        into.put(f, new Compiled(f.defaultValue() == null ? null : VALUES.valueToTree(f.defaultValue()),
                f.pattern() == null ? null : Pattern.compile(f.pattern()), Set.copyOf(names)));
        return into;
    }

    private JobSpecSchema() {
    }

    /** The declaration of a field by its dotted path ({@code quantize.bits}), or null when there is none. */
    public static FieldSpec field(String path) {
        FieldSpec f = ROOT;
        for (String part : path.split("\\.")) {
            if (f.fields() == null) {
                return null;
            }
            f = f.fields().stream().filter(c -> c.name().equals(part)).findFirst().orElse(null);
            if (f == null) {
                return null;
            }
        }
        return f;
    }

    /**
     * Checks a document; returns it with what its target decides ({@link TargetSettings}) and every default filled in,
     * or throws with every problem found.
     */
    public static ObjectNode validate(JsonNode doc) {
        List<Problem> problems = new ArrayList<>();
        if (doc == null || !doc.isObject()) {
            throw new InvalidJobSpecException(List.of(new Problem("", "a job spec must be an object")));
        }
        ObjectNode submitted = ((ObjectNode) doc).deepCopy();
        List<Problem> targetProblems = new ArrayList<>();
        TargetSettings.apply(submitted, targetProblems);
        ObjectNode filled = checkObject(ROOT, submitted, "", problems);
        if (problems.isEmpty()) {
            problems.addAll(targetProblems);
            crossChecks(filled, problems);
        }
        if (!problems.isEmpty()) {
            throw new InvalidJobSpecException(problems);
        }
        return filled;
    }

    private static ObjectNode checkObject(FieldSpec spec, JsonNode node, String path, List<Problem> problems) {
        ObjectNode out = NODES.objectNode();
        for (FieldSpec f : spec.fields()) {
            String p = path.isEmpty() ? f.name() : path + "." + f.name();
            JsonNode v = node.get(f.name());
            if (v == null || v.isNull()) {
                if (f.required()) {
                    problems.add(new Problem(p, "is required"));
                } else if (f.kind() == FieldSpec.Kind.OBJECT) {
                    out.set(f.name(), checkObject(f, NODES.objectNode(), p, problems));
                } else if (f.defaultValue() != null) {
                    out.set(f.name(), COMPILED.get(f).defaultNode().deepCopy()); // a list default is mutable
                }
                continue;
            }
            JsonNode checked = checkValue(f, v, p, problems);
            if (checked != null) {
                out.set(f.name(), checked);
            }
        }
        for (Iterator<String> it = node.fieldNames(); it.hasNext(); ) {
            String name = it.next();
            if (!COMPILED.get(spec).names().contains(name)) {
                problems.add(new Problem(path.isEmpty() ? name : path + "." + name, "unknown field"));
            }
        }
        return out;
    }

    private static JsonNode checkValue(FieldSpec f, JsonNode v, String p, List<Problem> problems) {
        switch (f.kind()) {
            case OBJECT -> {
                if (!v.isObject()) {
                    problems.add(new Problem(p, "must be an object"));
                    return null;
                }
                return checkObject(f, v, p, problems);
            }
            case STRING -> {
                // YAML reads `activations: 16` as a number: a whole number spelled as one of the allowed values is that value
                if (v.isIntegralNumber() && f.allowed() != null && f.allowed().contains(v.asText())) {
                    return TextNode.valueOf(v.asText());
                }
                if (!v.isTextual() || v.asText().isBlank()) {
                    problems.add(new Problem(p, "must be a non-empty string"));
                    return null;
                }
                if (!checkText(f, v.asText(), p, problems)) {
                    return null;
                }
                if (f.allowed() != null && !f.allowed().contains(v.asText())) {
                    problems.add(new Problem(p, "must be one of " + f.allowed() + ", got '" + v.asText() + "'"));
                }
                return v;
            }
            case INPUT -> {
                return checkInput(f, v, p, problems);
            }
            case INTEGER -> {
                // within the declared range, which lies within a Java long: 2^63 and beyond are refused here, not in binding
                if (!v.isIntegralNumber() || !v.canConvertToLong()) {
                    problems.add(new Problem(p, v.isIntegralNumber() ? range(f) + ", got " + clip(v.asText()) : "must be an integer"));
                    return null;
                }
                long x = v.asLong();
                if (x < f.min().longValue() || x > f.max().longValue()) {
                    problems.add(new Problem(p, range(f) + ", got " + x));
                } else if (f.allowed() != null && !f.allowed().contains(Long.toString(x))) {
                    problems.add(new Problem(p, "must be one of " + f.allowed() + ", got " + x));
                }
                return v;
            }
            case NUMBER -> {
                if (!v.isNumber() || !Double.isFinite(v.asDouble())) {
                    problems.add(new Problem(p, v.isNumber() ? "must be a finite number" : "must be a number"));
                    return null;
                }
                checkRange(f, v.asDouble(), p, problems);
                return v;
            }
            case BOOLEAN -> {
                if (!v.isBoolean()) {
                    problems.add(new Problem(p, "must be true or false"));
                    return null;
                }
                return v;
            }
            case STRING_LIST -> {
                if (!v.isArray()) {
                    problems.add(new Problem(p, "must be a list of strings"));
                    return null;
                }
                if (v.size() > MAX_LIST) {
                    problems.add(new Problem(p, "must have at most " + MAX_LIST + " items, got " + v.size()));
                    return null;
                }
                Set<String> seen = new HashSet<>();
                for (int i = 0; i < v.size(); i++) {
                    JsonNode e = v.get(i);
                    if (!e.isTextual()) {
                        problems.add(new Problem(p + "[" + i + "]", "must be a string"));
                    } else if (!checkText(f, e.asText(), p + "[" + i + "]", problems)) {
                        continue;
                    } else if (f.allowed() != null && !f.allowed().contains(e.asText())) {
                        problems.add(new Problem(p + "[" + i + "]", "must be one of " + f.allowed() + ", got '" + e.asText() + "'"));
                    } else if (!seen.add(e.asText())) {
                        problems.add(new Problem(p + "[" + i + "]", "'" + e.asText() + "' is listed twice"));
                    }
                }
                return v;
            }
            default -> throw new IllegalStateException(f.kind().toString());
        }
    }

    private static String range(FieldSpec f) {
        return "must be between " + f.min().longValue() + " and " + f.max().longValue();
    }

    /** At most the field's length, plain text ({@link PlainText}), and its pattern if it has one. */
    private static boolean checkText(FieldSpec f, String text, String p, List<Problem> problems) {
        String wrong = PlainText.problem(text, f.maxLength());
        if (wrong != null) {
            problems.add(new Problem(p, wrong));
            return false;
        }
        if (f.pattern() != null && !COMPILED.get(f).pattern().matcher(text).matches()) {
            problems.add(new Problem(p, "must match " + f.pattern()));
            return false;
        }
        return true;
    }

    /** An input: a path string (normalised to {path: P}) or an object naming exactly one allowed source. */
    private static JsonNode checkInput(FieldSpec f, JsonNode v, String p, List<Problem> problems) {
        ObjectNode out = NODES.objectNode();
        if (v.isTextual()) {
            if (!f.allowed().contains("path")) {
                problems.add(new Problem(p, "must name one of " + f.allowed()));
                return null;
            }
            v = NODES.objectNode().put("path", v.asText());
        }
        if (!v.isObject()) {
            problems.add(new Problem(p, "must be a path or an object with one of " + f.allowed()));
            return null;
        }
        int given = 0;
        for (Iterator<String> it = v.fieldNames(); it.hasNext(); ) {
            String source = it.next();
            JsonNode x = v.get(source);
            if (!f.allowed().contains(source)) {
                problems.add(new Problem(p + "." + source, "unknown field (" + String.join(", ", f.allowed()) + ")"));
                continue;
            }
            if (x == null || x.isNull()) {
                continue;
            }
            given++;
            if (!x.isTextual() || x.asText().isBlank()) {
                problems.add(new Problem(p + "." + source, "must be a non-empty string"));
            } else if (!source.equals("path") && !ID.matcher(x.asText()).matches()) {
                problems.add(new Problem(p + "." + source, "must be an id (a UUID), got '" + clip(x.asText()) + "'"));
            } else if (checkText(f, x.asText(), p + "." + source, problems)) {
                out.set(source, x);
            }
        }
        if (given != 1) {
            problems.add(new Problem(p, "give exactly one of " + String.join(", ", f.allowed())));
        }
        return out;
    }

    private static String clip(String s) {
        return s.length() <= 40 ? s : s.substring(0, 40) + "...";
    }

    private static void checkRange(FieldSpec f, double v, String p, List<Problem> problems) {
        if ((f.min() != null && v < f.min()) || (f.max() != null && v > f.max())) {
            problems.add(new Problem(p, "must be between " + fmt(f.min()) + " and " + fmt(f.max()) + ", got " + fmt(v)));
        }
    }

    private static String fmt(Double d) {
        return d == Math.rint(d) && Math.abs(d) < 1e15 ? Long.toString(d.longValue()) : Double.toString(d);
    }

    /** Rules across fields: model source, stage order and dependencies, bit/group/format combinations. */
    private static void crossChecks(ObjectNode s, List<Problem> problems) {
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
            if (genieBundle && dialog > JobSpec.Export.genieDialogTokens(ctx, ar)) {
                problems.add(new Problem("benchmark.newTokens", "benchmark.promptLength " + b.path("promptLength").asInt()
                        + " + benchmark.newTokens " + b.path("newTokens").asInt() + " = " + dialog + " tokens exceed "
                        + JobSpec.Export.genieDialogLimit(ctx, ar) + ": lower them, or raise export.ctx"));
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
            if (!JobSpec.Export.GENIE_PROMPT_LENGTHS.contains(e.path("seq").asInt())) {
                problems.add(new Problem("export.seq", "must be " + JobSpec.Export.GENIE_PROMPT_LENGTHS.stream().map(String::valueOf)
                        .collect(Collectors.joining(" or ")) + " for the genie variant (Genie's prompt graph, AR-N), got "
                        + e.path("seq").asInt()));
            }
            if (e.path("ctx").asInt() < JobSpec.Export.GENIE_MIN_CONTEXT) {
                problems.add(new Problem("export.ctx", "must be at least " + JobSpec.Export.GENIE_MIN_CONTEXT
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

    /** The JSON Schema (draft 2020-12) of the job spec, generated from the same declarations. */
    public static ObjectNode jsonSchema() {
        ObjectNode root = schemaOf(ROOT);
        root.put("$schema", "https://json-schema.org/draft/2020-12/schema");
        root.put("$id", "https://hexforge.dev/schemas/job-spec-v" + VERSION + ".json");
        root.put("title", "Hexforge job spec v" + VERSION);
        return root;
    }

    private static ObjectNode schemaOf(FieldSpec f) {
        ObjectNode n = NODES.objectNode();
        if (f.description() != null) {
            n.put("description", f.description());
        }
        switch (f.kind()) {
            case OBJECT -> {
                n.put("type", "object");
                n.put("additionalProperties", false);
                ObjectNode props = n.putObject("properties");
                ArrayNode required = NODES.arrayNode();
                for (FieldSpec c : f.fields()) {
                    props.set(c.name(), schemaOf(c));
                    if (c.required()) {
                        required.add(c.name());
                    }
                }
                if (!required.isEmpty()) {
                    n.set("required", required);
                }
            }
            case INPUT -> {
                ArrayNode any = n.putArray("oneOf");
                if (f.allowed().contains("path")) {
                    any.addObject().put("type", "string").put("maxLength", f.maxLength());
                }
                ObjectNode obj = any.addObject().put("type", "object").put("additionalProperties", false)
                        .put("minProperties", 1).put("maxProperties", 1);
                ObjectNode props = obj.putObject("properties");
                for (String source : f.allowed()) {
                    ObjectNode sn = props.putObject(source).put("type", "string");
                    if (source.equals("path")) {
                        sn.put("maxLength", f.maxLength());
                    } else {
                        sn.put("pattern", "^" + ID_PATTERN + "$");
                    }
                }
            }
            case STRING -> {
                n.put("type", "string");
                n.put("maxLength", f.maxLength());
                if (f.pattern() != null) {
                    n.put("pattern", "^" + f.pattern() + "$");
                }
                if (f.allowed() != null) {
                    ArrayNode en = n.putArray("enum");
                    f.allowed().forEach(en::add);
                }
            }
            case INTEGER, NUMBER -> {
                n.put("type", f.kind() == FieldSpec.Kind.INTEGER ? "integer" : "number");
                if (f.min() != null) {
                    n.set("minimum", f.kind() == FieldSpec.Kind.INTEGER ? NODES.numberNode(f.min().longValue()) : NODES.numberNode(f.min()));
                }
                if (f.max() != null) {
                    n.set("maximum", f.kind() == FieldSpec.Kind.INTEGER ? NODES.numberNode(f.max().longValue()) : NODES.numberNode(f.max()));
                }
                if (f.allowed() != null) {
                    ArrayNode en = n.putArray("enum");
                    f.allowed().forEach(a -> en.add(Long.parseLong(a)));
                }
            }
            case BOOLEAN -> n.put("type", "boolean");
            case STRING_LIST -> {
                n.put("type", "array");
                n.put("uniqueItems", true);
                n.put("maxItems", MAX_LIST);
                ObjectNode items = n.putObject("items").put("type", "string").put("maxLength", f.maxLength());
                if (f.allowed() != null) {
                    ArrayNode en = items.putArray("enum");
                    f.allowed().forEach(en::add);
                }
            }
        }
        if (f.defaultValue() != null) {
            n.set("default", COMPILED.get(f).defaultNode().deepCopy());
        }
        return n;
    }

}
