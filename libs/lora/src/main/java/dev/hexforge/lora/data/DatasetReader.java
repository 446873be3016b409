package dev.hexforge.lora.data;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.hexforge.tokenizer.ChatTemplate.Message;

import java.io.BufferedReader;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * Reads fine-tuning data: a JSON array ({@code .json}) or one object per line ({@code .jsonl}) of Alpaca objects
 * ({@code instruction}, optional {@code input}, {@code output}), chats ({@code messages}: {@code role},
 * {@code content}) or {@code {"text": ...}}; or a plain {@code .txt} file (documents separated by blank lines).
 */
public final class DatasetReader {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Set<String> ROLES = Set.of("system", "user", "assistant");

    private DatasetReader() {
    }

    public static List<TrainingRecord> read(Path file) {
        if (!Files.isRegularFile(file)) {
            throw new DatasetException(file + ": no such file");
        }
        String name = file.getFileName().toString().toLowerCase();
        List<TrainingRecord> records;
        try {
            if (name.endsWith(".txt")) {
                records = plainText(Files.readString(file, StandardCharsets.UTF_8));
            } else if (name.endsWith(".jsonl")) {
                records = jsonLines(file);
            } else if (name.endsWith(".json")) {
                records = jsonArray(file);
            } else {
                throw new DatasetException(file + ": unknown data format; use .json (array), .jsonl or .txt");
            }
        } catch (IOException e) {
            throw new DatasetException(file + ": cannot read: " + e.getMessage(), e);
        }
        if (records.isEmpty()) {
            throw new DatasetException(file + ": the dataset is empty");
        }
        return records;
    }

    private static List<TrainingRecord> plainText(String text) {
        List<TrainingRecord> out = new ArrayList<>();
        for (String doc : text.split("\\r?\\n\\s*\\r?\\n")) {
            if (!doc.isBlank()) {
                out.add(new TrainingRecord.PlainText(doc));
            }
        }
        return out;
    }

    private static List<TrainingRecord> jsonArray(Path file) throws IOException {
        JsonNode root;
        try {
            root = JSON.readTree(file.toFile());
        } catch (JsonProcessingException e) {
            throw new DatasetException(file + ": not valid JSON: " + e.getOriginalMessage());
        }
        if (root == null || !root.isArray()) {
            throw new DatasetException(file + ": expected a JSON array of examples");
        }
        List<TrainingRecord> out = new ArrayList<>();
        for (int i = 0; i < root.size(); i++) {
            out.add(record(root.get(i), file + " [" + i + "]"));
        }
        return out;
    }

    private static List<TrainingRecord> jsonLines(Path file) throws IOException {
        List<TrainingRecord> out = new ArrayList<>();
        try (BufferedReader r = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
            String line;
            int n = 0;
            while ((line = r.readLine()) != null) {
                n++;
                if (line.isBlank()) {
                    continue;
                }
                JsonNode node;
                try {
                    node = JSON.readTree(line);
                } catch (JsonProcessingException e) {
                    throw new DatasetException(file + " line " + n + ": not valid JSON: " + e.getOriginalMessage());
                }
                out.add(record(node, file + " line " + n));
            }
        }
        return out;
    }

    static TrainingRecord record(JsonNode n, String where) {
        if (n == null || !n.isObject()) {
            throw new DatasetException(where + ": expected an object");
        }
        if (n.has("messages")) {
            JsonNode ms = n.get("messages");
            if (!ms.isArray() || ms.isEmpty()) {
                throw new DatasetException(where + ": 'messages' must be a non-empty array");
            }
            List<Message> messages = new ArrayList<>();
            boolean assistant = false;
            for (int i = 0; i < ms.size(); i++) {
                JsonNode m = ms.get(i);
                String role = text(m, "role", where + " messages[" + i + "]");
                if (!ROLES.contains(role)) {
                    throw new DatasetException(where + " messages[" + i + "]: role '" + role + "' is not one of " + ROLES);
                }
                assistant |= role.equals("assistant");
                messages.add(new Message(role, text(m, "content", where + " messages[" + i + "]")));
            }
            if (!assistant) {
                throw new DatasetException(where + ": the chat has no assistant message to learn from");
            }
            return new TrainingRecord.Conversation(messages);
        }
        if (n.has("instruction") || n.has("output")) {
            String instruction = text(n, "instruction", where);
            String output = text(n, "output", where);
            JsonNode input = n.get("input");
            if (input != null && !input.isNull() && !input.isTextual()) {
                throw new DatasetException(where + ": 'input' must be a string");
            }
            return new TrainingRecord.Instruction(instruction, input == null || input.isNull() ? "" : input.asText(), output);
        }
        if (n.has("text")) {
            return new TrainingRecord.PlainText(text(n, "text", where));
        }
        throw new DatasetException(where + ": an example needs 'instruction' and 'output' (Alpaca), 'messages' (chat) "
                + "or 'text'; found fields " + fieldNames(n));
    }

    private static String text(JsonNode n, String field, String where) {
        JsonNode v = n.get(field);
        if (v == null || v.isNull()) {
            throw new DatasetException(where + ": missing field '" + field + "'");
        }
        if (!v.isTextual()) {
            throw new DatasetException(where + ": '" + field + "' must be a string");
        }
        return v.asText();
    }

    private static List<String> fieldNames(JsonNode n) {
        List<String> names = new ArrayList<>();
        n.fieldNames().forEachRemaining(names::add);
        return names;
    }
}
