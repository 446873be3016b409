package dev.hexforge.cli;

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
        if (text == null || command == null) {
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
                String value = m.group(1) == null ? "" : " " + m.group(1).replaceAll("^\\[|]$", "").replace(", ", ",");
                m.appendReplacement(b, Matcher.quoteReplacement(flags.get(field) + value + where));
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

    private static boolean isField(OptionSpec o) {
        return o.descriptionKey() != null && o.descriptionKey().contains(".");
    }
}
