package dev.hexforge.contracts;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.util.ArrayList;
import java.util.List;

/**
 * The job spec, version {@value #VERSION}: a submitted document is checked field by field against its declarations
 * ({@link JobSpecFields}, {@link FieldChecks}) after what its target decides ({@link TargetSettings}), then across
 * fields ({@link CrossFieldRules}); every problem is collected with its path, and the defaults are filled in.
 */
public final class JobSpecSchema {
    public static final int VERSION = 1;
    /** Most items of a list field. */
    public static final int MAX_LIST = 100;
    static final String ID_PATTERN = "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}";

    private JobSpecSchema() {
    }

    /** The declaration of a field by its dotted path ({@code quantize.bits}), or null when there is none. */
    public static FieldSpec field(String path) {
        FieldSpec f = JobSpecFields.ROOT;
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
        ObjectNode filled = FieldChecks.check(submitted, problems);
        if (problems.isEmpty()) {
            problems.addAll(targetProblems);
            CrossFieldRules.check(filled, problems);
        }
        if (!problems.isEmpty()) {
            throw new InvalidJobSpecException(problems);
        }
        return filled;
    }

    /** The JSON Schema (draft 2020-12) of the job spec, generated from the same declarations. */
    public static ObjectNode jsonSchema() {
        return JsonSchemaWriter.write();
    }
}
