package dev.hexforge.lora;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The parts of PEFT's {@code adapter_config.json} that define a LoRA adapter's math. Variants Hexforge does not
 * compute (DoRA, per-module rank or alpha patterns, fan-in-fan-out, trained biases) are refused by name.
 */
public record LoraConfig(int r, double alpha, double dropout, List<String> targetModules, boolean useRslora,
                         String baseModel) {

    public static final String FILE = "adapter_config.json";

    public LoraConfig {
        targetModules = List.copyOf(targetModules);
        if (r < 1) {
            throw new LoraException(FILE + ": r must be a positive integer, got " + r);
        }
        if (targetModules.isEmpty()) {
            throw new LoraException(FILE + ": target_modules is empty");
        }
    }

    /** The factor on B·A: alpha / r, or alpha / sqrt(r) with rsLoRA. */
    public float scale() {
        return (float) (useRslora ? alpha / Math.sqrt(r) : alpha / r);
    }

    public static LoraConfig read(Path dir) {
        Path f = dir.resolve(FILE);
        JsonNode c;
        try {
            c = new ObjectMapper().readTree(f.toFile());
        } catch (IOException e) {
            throw new LoraException((Files.exists(f) ? f + ": not valid JSON: " + e.getMessage() : dir + ": no " + FILE), e);
        }
        if (c == null || !c.isObject()) {
            throw new LoraException(f + ": not a JSON object");
        }
        String type = c.path("peft_type").asText("LORA");
        if (!type.equals("LORA")) {
            throw new LoraException(f + ": peft_type '" + type + "' is not supported (only LORA)");
        }
        List<String> unsupported = new ArrayList<>();
        if (c.path("use_dora").asBoolean(false)) {
            unsupported.add("use_dora");
        }
        if (c.path("fan_in_fan_out").asBoolean(false)) {
            unsupported.add("fan_in_fan_out");
        }
        if (c.path("rank_pattern").size() > 0) {
            unsupported.add("rank_pattern");
        }
        if (c.path("alpha_pattern").size() > 0) {
            unsupported.add("alpha_pattern");
        }
        if (!c.path("bias").asText("none").equals("none")) {
            unsupported.add("bias=" + c.path("bias").asText());
        }
        if (!unsupported.isEmpty()) {
            throw new LoraException(f + ": LoRA variants not supported yet: " + unsupported);
        }
        List<String> targets = new ArrayList<>();
        JsonNode t = c.path("target_modules");
        if (t.isArray()) {
            t.forEach(n -> targets.add(n.asText()));
        } else if (t.isTextual()) {
            throw new LoraException(f + ": target_modules as a regular expression is not supported; list the module names");
        }
        return new LoraConfig(c.path("r").asInt(0), c.path("lora_alpha").asDouble(8), c.path("lora_dropout").asDouble(0),
                targets, c.path("use_rslora").asBoolean(false), c.path("base_model_name_or_path").asText(null));
    }
}
