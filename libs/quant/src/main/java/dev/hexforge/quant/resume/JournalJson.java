package dev.hexforge.quant.resume;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.util.List;

/** The findings a layer-by-layer pass keeps in its journal (records, lists of them), as JSON. */
public final class JournalJson {
    private static final ObjectMapper JSON = new ObjectMapper();

    private JournalJson() {
    }

    public static String write(Object value) {
        try {
            return JSON.writeValueAsString(value);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("journal state not writable as JSON: " + e.getMessage(), e);
        }
    }

    /** A list written by {@link #write}, read as an array of its records. */
    public static <T> List<T> read(String json, Class<T[]> type) {
        try {
            return List.of(JSON.readValue(json, type));
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("journal state not readable: " + e.getMessage(), e);
        }
    }
}
