package dev.hexforge.contracts;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;

import static dev.hexforge.contracts.JobSpecSchema.ID_PATTERN;
import static dev.hexforge.contracts.JobSpecSchema.MAX_LIST;
import static dev.hexforge.contracts.JobSpecSchema.VERSION;

/** The job spec's JSON Schema (draft 2020-12), written from the declarations ({@link JobSpecFields}) validation uses. */
final class JsonSchemaWriter {
    private static final JsonNodeFactory NODES = JsonNodeFactory.instance;

    private JsonSchemaWriter() {
    }

    /** The JSON Schema (draft 2020-12) of the job spec, generated from the same declarations. */
    static ObjectNode write() {
        ObjectNode root = schemaOf(JobSpecFields.ROOT);
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
            n.set("default", FieldChecks.defaultNode(f));
        }
        return n;
    }
}
