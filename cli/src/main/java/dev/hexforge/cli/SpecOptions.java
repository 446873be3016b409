package dev.hexforge.cli;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.hexforge.contracts.FieldSpec;
import dev.hexforge.contracts.InvalidJobSpecException;
import dev.hexforge.contracts.JobSpec;
import dev.hexforge.contracts.JobSpecReader;
import dev.hexforge.contracts.JobSpecFields;
import dev.hexforge.contracts.JobSpecSchema;
import dev.hexforge.contracts.Problem;
import dev.hexforge.contracts.TargetSettings;
import picocli.CommandLine;
import picocli.CommandLine.Model.ArgSpec;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;

import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.ListResourceBundle;
import java.util.Map;
import java.util.ResourceBundle;

/**
 * The CLI's options that are job-spec fields take their default, help text and limits from the job spec's
 * declaration ({@link JobSpecSchema}), as the fleet and the dashboard do: an option names its field with
 * {@code descriptionKey = "quantize.bits"} and declares nothing else about it.
 */
final class SpecOptions implements CommandLine.IDefaultValueProvider {

    @Override
    public String defaultValue(ArgSpec arg) {
        FieldSpec f = field(arg);
        if (f == null || f.defaultValue() == null || f.defaultValue() instanceof Collection<?> c && c.isEmpty()) {
            return null;
        }
        return f.defaultValue() instanceof Collection<?> c ? String.join(",", c.stream().map(String::valueOf).toList())
                : String.valueOf(f.defaultValue());
    }

    /** Every field's help text, keyed by its path, with its default where it has one. */
    static ResourceBundle help() {
        Map<String, String> texts = new LinkedHashMap<>();
        collect(JobSpecFields.ROOT, "", texts);
        Object[][] contents = texts.entrySet().stream().map(e -> new Object[]{e.getKey(), e.getValue()}).toArray(Object[][]::new);
        return new ListResourceBundle() {
            @Override
            protected Object[][] getContents() {
                return contents;
            }
        };
    }

    private static void collect(FieldSpec f, String path, Map<String, String> out) {
        if (f.fields() != null) {
            f.fields().forEach(c -> collect(c, path.isEmpty() ? c.name() : path + "." + c.name(), out));
        } else if (f.description() != null && path.contains(".")) { // picocli also looks options up by name: "model" is not a key
            out.put(path, f.description() + (f.defaultValue() != null ? " (default: ${DEFAULT-VALUE})" : ""));
        }
    }

    /**
     * The job spec the command's keyed options given on its line say, for a job of {@code stages} (none: the job
     * spec's, or what the target decides), with {@code extra} values at their dotted paths (settings a flag gives in
     * another form, such as --sym): the document a job with the same settings would carry, validated and with what
     * its target decides and every default filled in, so the pass's own {@code options(JobSpec)} maps it. A
     * refused value is an error naming the option where one gave it ({@code --bits: must be between 2 and 8, got 9}),
     * as the server names the field of a job spec.
     */
    static JobSpec spec(CommandSpec command, List<String> stages, Map<String, Object> extra) {
        Map<String, String> flags = new LinkedHashMap<>();
        ObjectNode doc = document(command, stages, extra, flags);
        try {
            return JobSpecReader.of(doc);
        } catch (InvalidJobSpecException e) {
            List<String> all = flagged(e, flags);
            for (Problem p : e.problems()) {
                if (flag(flags, p) == null) {
                    all.add(p.toString());
                }
            }
            throw new IllegalArgumentException(String.join("; ", all));
        }
    }

    /**
     * What the command's target decides that its flags leave out ({@link TargetSettings}): the settings {@link #spec}
     * fills in beyond the declared defaults.
     */
    static List<TargetSettings.Derived> derived(CommandSpec command, List<String> stages, Map<String, Object> extra) {
        return TargetSettings.derived(document(command, stages, extra, new LinkedHashMap<>()));
    }

    /** The option a job-spec field is given by on this command, if it was given on the command line. */
    static OptionSpec given(CommandSpec command, String field) {
        return command.options().stream().filter(o -> field.equals(o.descriptionKey()) && matched(command, o)).findFirst().orElse(null);
    }

    /**
     * The options given on the command line; the rest are left to the job spec, as a job that leaves them out, so
     * what the target decides fills them and a default is never mistaken for a choice.
     */
    private static boolean matched(CommandSpec command, OptionSpec o) {
        CommandLine.ParseResult parsed = command.commandLine() == null ? null : command.commandLine().getParseResult();
        return parsed == null || parsed.hasMatchedOption(o);
    }

    private static ObjectNode document(CommandSpec command, List<String> stages, Map<String, Object> extra, Map<String, String> flags) {
        ObjectNode doc = JsonNodeFactory.instance.objectNode();
        doc.put("model", "/model");
        if (!stages.isEmpty()) {
            stages.forEach(doc.putArray("stages")::add);
        }
        for (OptionSpec o : command.options()) {
            if (field(o) == null || o.getValue() == null || !matched(command, o)) {
                continue;
            }
            put(doc, o.descriptionKey(), o.getValue());
            flags.put(o.descriptionKey(), o.longestName());
        }
        extra.forEach((path, value) -> put(doc, path, value));
        return doc;
    }

    private static void put(ObjectNode doc, String dotted, Object value) {
        String[] path = dotted.split("\\.");
        ObjectNode at = doc;
        for (int i = 0; i < path.length - 1; i++) {
            at = at.has(path[i]) ? (ObjectNode) at.get(path[i]) : at.putObject(path[i]);
        }
        at.set(path[path.length - 1], Json.MAPPER.valueToTree(value));
    }

    private static List<String> flagged(InvalidJobSpecException e, Map<String, String> flags) {
        List<String> mine = new ArrayList<>();
        for (Problem p : e.problems()) {
            String flag = flag(flags, p);
            if (flag != null) {
                mine.add(flag + ": " + p.message());
            }
        }
        return mine;
    }

    /** The option that gave the value a problem is about (an element of a list is the list's option), or null. */
    private static String flag(Map<String, String> flags, Problem p) {
        return flags.get(p.path().replaceAll("\\[\\d+]$", ""));
    }

    private static FieldSpec field(ArgSpec arg) {
        String key = arg.descriptionKey();
        return key == null || key.isEmpty() ? null : JobSpecSchema.field(key);
    }
}
