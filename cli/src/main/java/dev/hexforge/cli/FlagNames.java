package dev.hexforge.cli;

import dev.hexforge.contracts.FieldSpec;
import dev.hexforge.contracts.JobSpecSchema;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The passes and the job spec name settings by their spec fields ({@code quantize.group: 0}); on the command line a
 * message names the flag that sets it ({@code --group 0}), on the running command where it has one, else with the
 * commands that take it ({@code --variant genie (hexforge export, quantize)}).
 */
final class FlagNames {
    private FlagNames() {
    }

    static String translate(String text, CommandSpec command) {
        // a command that reads a job spec document (submit) speaks its fields: only the flags' own commands translate
        if (text == null || command == null || command.options().stream().noneMatch(FlagNames::isField)) {
            return text;
        }
        Map<String, List<String>> takenBy = new LinkedHashMap<>();
        Map<String, String> flags = new LinkedHashMap<>();
        collect(command.root(), takenBy, flags);
        command.options().stream().filter(o -> isField(o)).forEach(o -> flags.put(o.descriptionKey(), o.longestName()));
        List<String> fields = new ArrayList<>(flags.keySet());
        fields.sort(Comparator.comparingInt(String::length).reversed());
        String out = text;
        for (String field : fields) {
            Pattern p = Pattern.compile("(?<![\\w.])" + Pattern.quote(field) + "(?::\\s*(\\[[^\\]]*]|[\\w.+-]+))?(?![\\w.])");
            boolean here = command.options().stream().anyMatch(o -> field.equals(o.descriptionKey()));
            String where = here ? "" : " (hexforge " + String.join(", ", takenBy.get(field)) + ")";
            Matcher m = p.matcher(out);
            StringBuilder b = new StringBuilder();
            while (m.find()) {
                String value = m.group(1);
                String named = isValue(field, value)
                        ? flags.get(field) + " " + value.replaceAll("^\\[|]$", "").replace(", ", ",") + where
                        : flags.get(field) + where + m.group(0).substring(field.length()); // "field: message" stays one
                m.appendReplacement(b, Matcher.quoteReplacement(named));
            }
            m.appendTail(b);
            out = b.toString();
        }
        return out;
    }

    private static void collect(CommandSpec c, Map<String, List<String>> takenBy, Map<String, String> flags) {
        for (OptionSpec o : c.options()) {
            if (isField(o) && c.parent() != null) {
                takenBy.computeIfAbsent(o.descriptionKey(), k -> new ArrayList<>()).add(c.name());
                flags.putIfAbsent(o.descriptionKey(), o.longestName());
            }
        }
        c.subcommands().values().forEach(sub -> collect(sub.getCommandSpec(), takenBy, flags));
    }

    /** Whether {@code text}, written after "field: ", is a value of the field (else it is a message about it). */
    private static boolean isValue(String field, String text) {
        FieldSpec f = JobSpecSchema.field(field);
        if (text == null || f == null) {
            return false;
        }
        if (f.allowed() != null) {
            return f.allowed().contains(text) || text.startsWith("[");
        }
        return switch (f.kind()) {
            case INTEGER, NUMBER -> text.matches("-?[0-9][0-9.e+-]*");
            case BOOLEAN -> text.equals("true") || text.equals("false");
            default -> false;
        };
    }

    /** An option that sets a job-spec field (help and version options have keys of their own). */
    private static boolean isField(OptionSpec o) {
        String key = o.descriptionKey();
        return key != null && key.contains(".") && JobSpecSchema.field(key) != null;
    }
}
