package dev.hexforge.devicerunner.adb;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.IOException;

/**
 * What {@code genie-t2t-run --profile FILE} measured, read from its JSON: the dialog component's
 * {@code GenieDialog_create} event ({@code init-time}, µs) and its last {@code GenieDialog_query} event
 * ({@code num-prompt-tokens}, {@code prompt-processing-rate} tokens/s, {@code time-to-first-token} µs,
 * {@code num-generated-tokens}, {@code token-generation-rate} tokens/s, {@code token-generation-time} µs); each metric an
 * object with a {@code value}.
 */
public record GenieProfile(double initMicros, int promptTokens, double promptTokensPerSecond, double timeToFirstTokenMicros,
                           int generatedTokens, double tokensPerSecond, double generationMicros) {
    private static final ObjectMapper JSON = new ObjectMapper();

    public static GenieProfile parse(String json) {
        JsonNode root;
        try {
            root = JSON.readTree(json);
        } catch (IOException e) {
            throw new IllegalArgumentException("genie-t2t-run's profile is not JSON: " + e.getMessage(), e);
        }
        JsonNode dialog = null;
        for (JsonNode c : root.path("components")) {
            if (c.path("type").asText().equals("dialog")) {
                dialog = c;
            }
        }
        if (dialog == null) {
            throw new IllegalArgumentException("genie-t2t-run's profile has no dialog component");
        }
        JsonNode create = null;
        JsonNode query = null;
        for (JsonNode e : dialog.path("events")) {
            switch (e.path("type").asText()) {
                case "GenieDialog_create" -> create = e;
                case "GenieDialog_query" -> query = e;
                default -> {
                }
            }
        }
        if (create == null || query == null) {
            throw new IllegalArgumentException("genie-t2t-run's profile lacks a GenieDialog_create or GenieDialog_query event");
        }
        return new GenieProfile(value(create, "init-time"), (int) value(query, "num-prompt-tokens"), value(query, "prompt-processing-rate"),
                value(query, "time-to-first-token"), (int) value(query, "num-generated-tokens"), value(query, "token-generation-rate"),
                value(query, "token-generation-time"));
    }

    private static double value(JsonNode event, String metric) {
        JsonNode v = event.path(metric).path("value");
        if (!v.isNumber() || !Double.isFinite(v.asDouble()) || v.asDouble() < 0) {
            throw new IllegalArgumentException("genie-t2t-run's profile has no " + metric + " in its " + event.path("type").asText() + " event");
        }
        return v.asDouble();
    }
}
