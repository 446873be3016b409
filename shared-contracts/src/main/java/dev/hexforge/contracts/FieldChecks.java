package dev.hexforge.contracts;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.TextNode;

import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

import static dev.hexforge.contracts.JobSpecSchema.MAX_LIST;

/**
 * Each field's value against its declaration ({@link JobSpecFields}): its type, range, allowed values, length, plain
 * text and pattern; unknown fields refused, defaults filled in. Every problem is collected with its path.
 */
final class FieldChecks {
    private static final JsonNodeFactory NODES = JsonNodeFactory.instance;
    /** Turns default values into nodes; one shared mapper, whose serializer cache a fresh one per value would rebuild. */
    private static final ObjectMapper VALUES = new ObjectMapper();

    /**
     * What validation needs of each declared field, worked out once: its default as a node, its pattern compiled and,
     * for an object, its fields' names. Keyed by identity: a record's hash would walk the whole declaration.
     */
    private record Compiled(JsonNode defaultNode, Pattern pattern, Set<String> names) {
    }

    private static final Pattern ID = Pattern.compile(JobSpecSchema.ID_PATTERN);
    private static final Map<FieldSpec, Compiled> COMPILED = compile(JobSpecFields.ROOT, new IdentityHashMap<>());

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

    private FieldChecks() {
    }

    /** The document checked against the declarations, with every default filled in; problems added to {@code problems}. */
    static ObjectNode check(ObjectNode doc, List<Problem> problems) {
        return checkObject(JobSpecFields.ROOT, doc, "", problems);
    }

    /** A field's default value as a node (a fresh copy), or null when it has none. */
    static JsonNode defaultNode(FieldSpec f) {
        JsonNode d = COMPILED.get(f).defaultNode();
        return d == null ? null : d.deepCopy();
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
}
