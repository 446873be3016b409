package dev.hexforge.devicerunner.adb;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What {@code qnn-profile-viewer --input_log qnn-profiling-data.log} prints for a {@code --profiling_level basic}
 * run, read back: the init (context load) time, the average execute time of one inference, and the backend's own
 * breakdown of an execute (accelerator time, RPC time...), all in microseconds as the viewer prints them.
 */
public record QnnProfile(double initMicros, double executeMicros, Map<String, Double> executeBreakdownMicros) {
    private static final Pattern NETRUN = Pattern.compile("^\\s*NetRun:\\s*([0-9.]+)\\s*us", Pattern.MULTILINE);
    private static final Pattern BACKEND = Pattern.compile("^\\s*Backend \\((.+)\\):\\s*([0-9.]+)\\s*us\\s*$", Pattern.MULTILINE);

    public static QnnProfile parse(String viewerOutput) {
        String init = section(viewerOutput, "Init Stats:");
        String exec = section(viewerOutput, "Execute Stats (Average):");
        if (init == null || exec == null) {
            throw new AdbException("qnn-profile-viewer printed no Init / Execute (Average) stats: is the log from a "
                    + "--profiling_level basic run? It printed: " + head(viewerOutput));
        }
        Matcher i = NETRUN.matcher(init);
        Matcher e = NETRUN.matcher(exec);
        if (!i.find() || !e.find()) {
            throw new AdbException("qnn-profile-viewer's stats have no NetRun time: " + head(viewerOutput));
        }
        Map<String, Double> breakdown = new LinkedHashMap<>();
        Matcher b = BACKEND.matcher(exec);
        while (b.find()) {
            breakdown.put(b.group(1), Double.parseDouble(b.group(2)));
        }
        return new QnnProfile(Double.parseDouble(i.group(1)), Double.parseDouble(e.group(1)), breakdown);
    }

    /** The text from the header line to the next "... Stats" header. */
    private static String section(String text, String header) {
        int at = text.indexOf(header);
        if (at < 0) {
            return null;
        }
        int from = at + header.length();
        Matcher next = Pattern.compile("^\\S.*Stats.*:\\s*$", Pattern.MULTILINE).matcher(text);
        int end = text.length();
        if (next.find(from)) {
            end = next.start();
        }
        return text.substring(from, end);
    }

    private static String head(String text) {
        return text.length() > 500 ? text.substring(0, 500) + "..." : text;
    }
}
