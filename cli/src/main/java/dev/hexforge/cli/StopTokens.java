package dev.hexforge.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** End-of-sequence ids from generation_config.json (or config.json), as Hugging Face generate uses them. */
final class StopTokens {
    private StopTokens() {
    }

    static List<Integer> of(Path dir) {
        for (String f : new String[]{"generation_config.json", "config.json"}) {
            Path p = dir.resolve(f);
            if (!Files.isRegularFile(p)) {
                continue;
            }
            try {
                JsonNode eos = new ObjectMapper().readTree(p.toFile()).get("eos_token_id");
                List<Integer> ids = new ArrayList<>();
                if (eos != null && eos.isArray()) {
                    eos.forEach(n -> ids.add(n.asInt()));
                } else if (eos != null && eos.isNumber()) {
                    ids.add(eos.asInt());
                }
                if (!ids.isEmpty()) {
                    return ids;
                }
            } catch (IOException e) {
                throw new IllegalArgumentException(p + ": not valid JSON: " + e.getMessage(), e);
            }
        }
        return List.of();
    }
}
