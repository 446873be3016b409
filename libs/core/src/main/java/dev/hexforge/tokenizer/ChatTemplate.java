package dev.hexforge.tokenizer;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * ChatML, as Qwen's templates render it: {@code <|im_start|>{role}\n{content}<|im_end|>\n} per message, then
 * {@code <|im_start|>assistant\n} as the generation prompt. A template that inserts a default system message when
 * the conversation has none (Qwen2.5's) is honoured: the default text is read from the template itself.
 */
public record ChatTemplate(String defaultSystemPrompt) {
    private static final Pattern DEFAULT_SYSTEM =
            Pattern.compile("'<\\|im_start\\|>system\\\\n([^'<]*)<\\|im_end\\|>\\\\n'");

    public record Message(String role, String content) {
    }

    public static ChatTemplate load(Path dir) {
        Path cfg = dir.resolve("tokenizer_config.json");
        if (!Files.isRegularFile(cfg)) {
            return new ChatTemplate(null);
        }
        try {
            JsonNode root = new ObjectMapper().readTree(cfg.toFile());
            String template = root.path("chat_template").asText("");
            Matcher m = DEFAULT_SYSTEM.matcher(template);
            return new ChatTemplate(m.find() ? m.group(1) : null);
        } catch (IOException e) {
            throw new TokenizerException(cfg + ": not valid JSON: " + e.getMessage(), e);
        }
    }

    public String render(List<Message> messages, boolean addGenerationPrompt) {
        StringBuilder sb = new StringBuilder();
        if (defaultSystemPrompt != null && (messages.isEmpty() || !messages.get(0).role().equals("system"))) {
            sb.append("<|im_start|>system\n").append(defaultSystemPrompt).append("<|im_end|>\n");
        }
        for (Message m : messages) {
            sb.append("<|im_start|>").append(m.role()).append('\n').append(m.content()).append("<|im_end|>\n");
        }
        if (addGenerationPrompt) {
            sb.append("<|im_start|>assistant\n");
        }
        return sb.toString();
    }

    public String userPrompt(String text) {
        return render(List.of(new Message("user", text)), true);
    }
}
