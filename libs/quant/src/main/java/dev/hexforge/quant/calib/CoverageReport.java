package dev.hexforge.quant.calib;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What a calibration set covers: samples, tokens, and the mix of scripts (by letters of each Unicode script). A
 * script present but under a third of the letters is warned about (the seed's advice: at least 1:1 Chinese to
 * English for Chinese use).
 */
public record CoverageReport(int samples, long tokens, Map<String, Double> scriptShare, List<String> warnings) {

    static CoverageReport of(List<String> texts, List<int[]> seqs) {
        Map<String, Long> counts = new LinkedHashMap<>();
        long letters = 0;
        for (String t : texts) {
            for (int i = 0; i < t.length(); ) {
                int cp = t.codePointAt(i);
                i += Character.charCount(cp);
                if (Character.isLetter(cp)) {
                    counts.merge(scriptName(Character.UnicodeScript.of(cp)), 1L, Long::sum);
                    letters++;
                }
            }
        }
        Map<String, Double> share = new LinkedHashMap<>();
        List<String> warnings = new ArrayList<>();
        for (Map.Entry<String, Long> e : counts.entrySet()) {
            double s = letters == 0 ? 0 : (double) e.getValue() / letters;
            share.put(e.getKey(), s);
        }
        if (share.size() > 1) {
            share.forEach((script, s) -> {
                if (s < 1.0 / 3 && s > 0.01) {
                    warnings.add(String.format("calibration letters in %s are %.0f%% of the set, under a third: "
                            + "models used in that language quantize better with a more balanced mix", script, s * 100));
                }
            });
        }
        return new CoverageReport(texts.size(), seqs.stream().mapToLong(a -> a.length).sum(), share, warnings);
    }

    private static String scriptName(Character.UnicodeScript s) {
        return switch (s) {
            case HAN -> "Chinese (Han)";
            case LATIN -> "Latin";
            default -> s.name().charAt(0) + s.name().substring(1).toLowerCase();
        };
    }
}
