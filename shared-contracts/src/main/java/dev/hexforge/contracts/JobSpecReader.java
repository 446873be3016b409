package dev.hexforge.contracts;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.exc.MismatchedInputException;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;

import java.nio.charset.StandardCharsets;
import java.util.List;

/** Reads job specs from JSON or YAML text: malformed text, unknown fields and bad values are all reported. */
public final class JobSpecReader {
    public static final int MAX_BYTES = 1 << 20;
    /** Duplicate keys and anything after the document (a second JSON value, a second YAML document) are refused. */
    private static final ObjectMapper JSON = new ObjectMapper().enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION)
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);
    private static final ObjectMapper YAML = new ObjectMapper(new YAMLFactory()).enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION)
            .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);

    public enum Format { JSON, YAML }

    private JobSpecReader() {
    }

    public static JobSpec read(String text, Format format) {
        if (text.getBytes(StandardCharsets.UTF_8).length > MAX_BYTES) {
            throw new InvalidJobSpecException(List.of(new Problem("", "the document is larger than " + MAX_BYTES + " bytes")));
        }
        JsonNode doc;
        try {
            doc = (format == Format.JSON ? JSON : YAML).readTree(text);
        } catch (MismatchedInputException e) {
            if (e.getMessage() != null && e.getMessage().contains("Trailing token")) {
                String where = e.getLocation() == null ? "" : " at line " + e.getLocation().getLineNr();
                throw new InvalidJobSpecException(List.of(new Problem("", "a job spec is exactly one " + format
                        + (format == Format.YAML ? " document" : " value") + "; found more" + where)));
            }
            throw new InvalidJobSpecException(List.of(new Problem("", "malformed " + format + ": " + e.getOriginalMessage())));
        } catch (JsonProcessingException e) {
            String where = e.getLocation() == null ? "" : " at line " + e.getLocation().getLineNr() + ", column " + e.getLocation().getColumnNr();
            throw new InvalidJobSpecException(List.of(new Problem("", "malformed " + format + where + ": " + e.getOriginalMessage())));
        }
        return bind(JobSpecSchema.validate(doc));
    }

    /** Guesses the format from the text: a document starting with '{' is JSON, anything else YAML. */
    public static JobSpec read(String text) {
        return read(text, text.stripLeading().startsWith("{") ? Format.JSON : Format.YAML);
    }

    /** A spec document already parsed (the CLI builds one from its flags): validated, defaults filled, bound. */
    public static JobSpec of(JsonNode doc) {
        return bind(JobSpecSchema.validate(doc));
    }

    static JobSpec bind(ObjectNode validated) {
        try {
            return JSON.treeToValue(validated, JobSpec.class);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("a validated spec failed to bind: " + e.getMessage(), e);
        }
    }

    public static String toJson(JobSpec spec) {
        try {
            return JSON.writerWithDefaultPrettyPrinter().writeValueAsString(spec);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }
}
