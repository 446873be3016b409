package dev.hexforge.cli;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.util.LinkedHashMap;
import java.util.Map;

/** The single JSON object a command prints on stdout with --json. */
final class Json {
    static final ObjectMapper MAPPER = new ObjectMapper();
    private final Map<String, Object> fields = new LinkedHashMap<>();

    Json put(String key, Object value) {
        fields.put(key, value);
        return this;
    }

    Map<String, Object> fields() {
        return fields;
    }

    void print() {
        try {
            System.out.println(MAPPER.writeValueAsString(fields));
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }
}
