package dev.hexforge.lora;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

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
        targetModules = targetModules.stream().distinct().sorted().toList();
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

    /**
     * {@code adapter_config.json} with every key PEFT 0.19.1's {@code LoraConfig.save_pretrained} writes (sorted,
     * target modules sorted), so PEFT loads it as its own.
     */
    public String toPeftJson() {
        ObjectMapper om = new ObjectMapper();
        ObjectNode c = om.createObjectNode();
        c.putNull("alora_invocation_tokens");
        c.putObject("alpha_pattern");
        c.putNull("arrow_config");
        c.putNull("auto_mapping");
        if (baseModel == null) {
            c.putNull("base_model_name_or_path");
        } else {
            c.put("base_model_name_or_path", baseModel);
        }
        c.put("bias", "none");
        c.putNull("corda_config");
        c.put("ensure_weight_tying", false);
        c.putNull("eva_config");
        c.putNull("exclude_modules");
        c.put("fan_in_fan_out", false);
        c.put("inference_mode", true);
        c.put("init_lora_weights", true);
        c.putNull("layer_replication");
        c.putNull("layers_pattern");
        c.putNull("layers_to_transform");
        c.putObject("loftq_config");
        if (alpha == Math.rint(alpha)) {
            c.put("lora_alpha", (long) alpha);
        } else {
            c.put("lora_alpha", alpha);
        }
        c.put("lora_bias", false);
        c.put("lora_dropout", dropout);
        c.putNull("lora_ga_config");
        c.putNull("megatron_config");
        c.put("megatron_core", "megatron.core");
        c.putNull("modules_to_save");
        c.put("peft_type", "LORA");
        c.put("peft_version", "0.19.1");
        c.put("qalora_group_size", 16);
        c.put("r", r);
        c.putObject("rank_pattern");
        c.putNull("revision");
        targetModules.stream().sorted().forEach(c.putArray("target_modules")::add);
        c.putNull("target_parameters");
        c.put("task_type", "CAUSAL_LM");
        c.putNull("trainable_token_indices");
        c.putNull("use_bdlora");
        c.put("use_dora", false);
        c.put("use_qalora", false);
        c.put("use_rslora", useRslora);
        StringBuilder sb = new StringBuilder();
        pythonStyle(c, sb, "");
        return sb.toString();
    }

    /** {@code json.dumps(indent=2)} layout, which is how PEFT's file looks byte for byte. */
    private static void pythonStyle(JsonNode n, StringBuilder sb, String indent) {
        String inner = indent + "  ";
        if (n.isObject() && n.size() > 0) {
            sb.append("{\n");
            var it = n.fields();
            while (it.hasNext()) {
                var e = it.next();
                sb.append(inner).append('"').append(e.getKey()).append("\": ");
                pythonStyle(e.getValue(), sb, inner);
                sb.append(it.hasNext() ? ",\n" : "\n");
            }
            sb.append(indent).append('}');
        } else if (n.isArray() && n.size() > 0) {
            sb.append("[\n");
            for (int i = 0; i < n.size(); i++) {
                sb.append(inner);
                pythonStyle(n.get(i), sb, inner);
                sb.append(i < n.size() - 1 ? ",\n" : "\n");
            }
            sb.append(indent).append(']');
        } else if (n.isObject()) {
            sb.append("{}");
        } else if (n.isArray()) {
            sb.append("[]");
        } else {
            sb.append(n.toString());
        }
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
