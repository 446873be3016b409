package dev.hexforge.contracts;

import java.util.Arrays;
import java.util.List;

/**
 * One field of the job spec: its type, default, documentation and limits. The spec's validator, its defaults and
 * its JSON Schema are all derived from these declarations, so they cannot drift apart.
 */
public record FieldSpec(String name, Kind kind, Object defaultValue, String description, Double min, Double max,
                        List<String> allowed, List<FieldSpec> fields, boolean required, String pattern, int maxLength) {

    /**
     * INPUT: something a stage reads, named by id ({@code {upload: ID}}, {@code {artifact: ID}}) or as a server path
     * ({@code {path: P}}, or the path alone as a string), the sources allowed listed in {@code allowed}.
     */
    public enum Kind { STRING, INTEGER, NUMBER, BOOLEAN, STRING_LIST, OBJECT, INPUT }

    /** Strings, list items included, are at most this long unless declared otherwise. */
    public static final int DEFAULT_MAX_LENGTH = 200;

    public FieldSpec(String name, Kind kind, Object defaultValue, String description, Double min, Double max,
                     List<String> allowed, List<FieldSpec> fields, boolean required) {
        this(name, kind, defaultValue, description, min, max, allowed, fields, required, null, DEFAULT_MAX_LENGTH);
    }

    public static FieldSpec string(String name, Object def, String doc) {
        return new FieldSpec(name, Kind.STRING, def, doc, null, null, null, null, false);
    }

    /** A string that must match a regular expression (whole), at most {@code maxLength} characters. */
    public static FieldSpec matching(String name, Object def, String pattern, int maxLength, String doc) {
        return new FieldSpec(name, Kind.STRING, def, doc, null, null, null, null, false, pattern, maxLength);
    }

    public static FieldSpec input(String name, String doc, String... sources) {
        return new FieldSpec(name, Kind.INPUT, null, doc, null, null, List.of(sources), null, false, null, InputPolicy.MAX_PATH_LENGTH);
    }

    public static FieldSpec oneOf(String name, String def, String doc, String... allowed) {
        return new FieldSpec(name, Kind.STRING, def, doc, null, null, List.of(allowed), null, false);
    }

    public static FieldSpec integer(String name, long def, long min, long max, String doc) {
        return new FieldSpec(name, Kind.INTEGER, def, doc, (double) min, (double) max, null, null, false);
    }

    /** An integer that must be one of {@code allowed}. */
    public static FieldSpec integerOneOf(String name, long def, String doc, long... allowed) {
        long min = Arrays.stream(allowed).min().orElseThrow();
        long max = Arrays.stream(allowed).max().orElseThrow();
        return new FieldSpec(name, Kind.INTEGER, def, doc, (double) min, (double) max,
                Arrays.stream(allowed).mapToObj(Long::toString).toList(), null, false);
    }

    /** An integer whose default is a rule over other fields (stated in {@code doc}); absent stays absent. */
    public static FieldSpec integer(String name, long min, long max, String doc) {
        return new FieldSpec(name, Kind.INTEGER, null, doc, (double) min, (double) max, null, null, false);
    }

    /** A boolean whose default is a rule over other fields (stated in {@code doc}); absent stays absent. */
    public static FieldSpec bool(String name, String doc) {
        return new FieldSpec(name, Kind.BOOLEAN, null, doc, null, null, null, null, false);
    }

    public static FieldSpec number(String name, double def, double min, double max, String doc) {
        return new FieldSpec(name, Kind.NUMBER, def, doc, min, max, null, null, false);
    }

    public static FieldSpec bool(String name, boolean def, String doc) {
        return new FieldSpec(name, Kind.BOOLEAN, def, doc, null, null, null, null, false);
    }

    public static FieldSpec strings(String name, List<String> def, String doc, String... allowed) {
        return new FieldSpec(name, Kind.STRING_LIST, def, doc, null, null, allowed.length == 0 ? null : List.of(allowed), null, false);
    }

    public static FieldSpec object(String name, String doc, FieldSpec... fields) {
        return new FieldSpec(name, Kind.OBJECT, null, doc, null, null, null, List.of(fields), false);
    }

    public FieldSpec asRequired() {
        return new FieldSpec(name, kind, defaultValue, description, min, max, allowed, fields, true, pattern, maxLength);
    }
}
