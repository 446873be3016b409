package dev.hexforge.contracts;

/**
 * The rule for text a person reads (names of jobs, uploads, devices and tokens; strings a device reports): bounded,
 * and free of characters that do not show as themselves — control characters (Unicode category Cc), format characters
 * (Cf: the bidi overrides and isolates that make {@code job\u202Egnp.exe} read as {@code jobexe.png}, zero-width
 * spaces and joiners, the byte-order mark), line and paragraph separators (Zl, Zp) and unpaired surrogates (Cs).
 */
public final class PlainText {
    private PlainText() {
    }

    /** What is wrong with {@code text} ("must be at most 200 characters, got 201", ...), or null when it is fine. */
    public static String problem(String text, int maxLength) {
        if (text.length() > maxLength) {
            return "must be at most " + maxLength + " characters, got " + text.length();
        }
        for (int i = 0; i < text.length(); ) {
            int cp = text.codePointAt(i);
            if (hidden(cp)) {
                return "must not contain control or invisible formatting characters (U+"
                        + String.format("%04X", cp) + " at position " + i + ")";
            }
            i += Character.charCount(cp);
        }
        return null;
    }

    /** Whether the code point is one the rule refuses. */
    static boolean hidden(int cp) {
        int type = Character.getType(cp);
        return type == Character.CONTROL || type == Character.FORMAT || type == Character.LINE_SEPARATOR
                || type == Character.PARAGRAPH_SEPARATOR || type == Character.SURROGATE;
    }

    /** Throws {@link IllegalArgumentException} naming {@code field} when {@link #problem} finds something. */
    public static void require(String field, String text, int maxLength) {
        String p = text == null ? null : problem(text, maxLength);
        if (p != null) {
            throw new IllegalArgumentException(field + ": " + p);
        }
    }
}
