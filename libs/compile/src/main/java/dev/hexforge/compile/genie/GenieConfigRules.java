package dev.hexforge.compile.genie;

import com.fasterxml.jackson.databind.JsonNode;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The rules Genie's loader holds a {@code genie_config.json} to, section by section, for the sections a text-to-text
 * bundle uses: every mandatory field present, no key it does not know (it refuses any), each value of its kind,
 * versions 1, the backend's and the model's type with their own section, and RoPE given either as the backend's
 * {@code pos-id-dim} / {@code rope-theta} or as the model's {@code positional-encoding}, never both. Checked on every
 * config Hexforge writes, and by the tests on what a bundle holds.
 */
public final class GenieConfigRules {
    enum Kind { NUMBER, STRING, BOOLEAN, OBJECT, ARRAY, NUMBER_OR_ARRAY, OBJECT_OR_ARRAY }

    private record Section(Set<String> mandatory, Map<String, Kind> keys) {
    }

    private static final Section ROOT = new Section(Set.of("dialog"), Map.of("dialog", Kind.OBJECT));
    private static final Section DIALOG = new Section(Set.of("version", "type", "context", "tokenizer", "engine"), Map.ofEntries(
            Map.entry("version", Kind.NUMBER), Map.entry("type", Kind.STRING), Map.entry("context", Kind.OBJECT),
            Map.entry("tokenizer", Kind.OBJECT), Map.entry("sampler", Kind.OBJECT), Map.entry("engine", Kind.OBJECT_OR_ARRAY),
            Map.entry("embedding", Kind.OBJECT), Map.entry("debug", Kind.OBJECT), Map.entry("stop-sequence", Kind.ARRAY),
            Map.entry("max-num-tokens", Kind.NUMBER), Map.entry("ssd-q1", Kind.OBJECT), Map.entry("lade", Kind.OBJECT),
            Map.entry("spd", Kind.OBJECT), Map.entry("multistream", Kind.OBJECT), Map.entry("eaglet", Kind.OBJECT),
            Map.entry("kv-share", Kind.OBJECT)));
    private static final Section CONTEXT = new Section(Set.of("version", "bos-token", "eos-token", "size", "n-vocab"), Map.of(
            "version", Kind.NUMBER, "bos-token", Kind.NUMBER, "eos-token", Kind.NUMBER_OR_ARRAY, "eot-token", Kind.NUMBER,
            "size", Kind.NUMBER, "n-vocab", Kind.NUMBER, "draft-n-vocab", Kind.NUMBER, "pad-token", Kind.NUMBER,
            "n-embd", Kind.NUMBER));
    private static final Section SAMPLER = new Section(Set.of("version"), Map.of("version", Kind.NUMBER, "seed", Kind.NUMBER,
            "temp", Kind.NUMBER, "top-k", Kind.NUMBER, "top-p", Kind.NUMBER, "type", Kind.STRING, "greedy", Kind.BOOLEAN));
    private static final Section TOKENIZER = new Section(Set.of("version", "path"), Map.of("version", Kind.NUMBER,
            "path", Kind.STRING));
    private static final Section ENGINE = new Section(Set.of("version", "backend", "model", "n-threads"), Map.of(
            "version", Kind.NUMBER, "backend", Kind.OBJECT, "model", Kind.OBJECT, "n-threads", Kind.NUMBER, "role", Kind.STRING,
            "longcontext", Kind.OBJECT, "cache-groups", Kind.ARRAY));
    private static final Section BACKEND = new Section(Set.of("version", "type"), Map.of("version", Kind.NUMBER,
            "type", Kind.STRING, "extensions", Kind.STRING, "QnnHtp", Kind.OBJECT, "QnnGenAiTransformer", Kind.OBJECT));
    private static final Section QNN_HTP = new Section(Set.of("version", "spill-fill-bufsize", "mmap-budget", "use-mmap",
            "cpu-mask", "poll"), Map.ofEntries(Map.entry("version", Kind.NUMBER), Map.entry("spill-fill-bufsize", Kind.NUMBER),
            Map.entry("data-alignment-size", Kind.NUMBER), Map.entry("mmap-budget", Kind.NUMBER), Map.entry("use-mmap", Kind.BOOLEAN),
            Map.entry("pos-id-dim", Kind.NUMBER), Map.entry("cpu-mask", Kind.STRING), Map.entry("poll", Kind.BOOLEAN),
            Map.entry("kv-dim", Kind.NUMBER), Map.entry("kv-update-method", Kind.STRING), Map.entry("allow-async-init", Kind.BOOLEAN),
            Map.entry("rope-theta", Kind.NUMBER), Map.entry("enable-graph-switching", Kind.BOOLEAN),
            Map.entry("shared-engine", Kind.BOOLEAN), Map.entry("graph-switching-lora-policy", Kind.STRING),
            Map.entry("skip-lora-validation", Kind.BOOLEAN)));
    private static final Section MODEL = new Section(Set.of("version", "type"), Map.of("version", Kind.NUMBER,
            "type", Kind.STRING, "binary", Kind.OBJECT, "library", Kind.OBJECT, "positional-encoding", Kind.OBJECT,
            "draft-token-map", Kind.STRING));
    private static final Section BINARY = new Section(Set.of("version", "ctx-bins"), Map.of("version", Kind.NUMBER,
            "ctx-bins", Kind.ARRAY, "lora", Kind.OBJECT));
    private static final Section POSITIONAL = new Section(Set.of(), Map.of("type", Kind.STRING, "rope-dim", Kind.NUMBER,
            "rope-theta", Kind.NUMBER, "rope-scaling", Kind.OBJECT));
    private static final Section ROPE_SCALING = new Section(Set.of(), Map.of("rope-type", Kind.STRING, "factor", Kind.NUMBER,
            "low-freq-factor", Kind.NUMBER, "high-freq-factor", Kind.NUMBER, "original-max-position-embeddings", Kind.NUMBER,
            "short-factor", Kind.ARRAY, "long-factor", Kind.ARRAY));

    private GenieConfigRules() {
    }

    /** What Genie's loader would refuse in {@code config}, each naming its path; empty when it loads. */
    public static List<String> check(JsonNode config) {
        List<String> p = new ArrayList<>();
        if (!section(config, "", ROOT, p)) {
            return p;
        }
        JsonNode dialog = config.path("dialog");
        if (!section(dialog, "dialog", DIALOG, p)) {
            return p;
        }
        String type = dialog.path("type").asText();
        if (!Set.of("basic", "ssd-q1", "lade", "spd", "multistream", "eaglet", "kv-share").contains(type)) {
            p.add("dialog.type: unsupported dialog type '" + type + "'");
        }
        section(dialog.path("context"), "dialog.context", CONTEXT, p);
        section(dialog.path("tokenizer"), "dialog.tokenizer", TOKENIZER, p);
        if (dialog.has("sampler")) {
            section(dialog.path("sampler"), "dialog.sampler", SAMPLER, p);
        }
        JsonNode engines = dialog.path("engine");
        if (engines.isArray()) {
            for (int i = 0; i < engines.size(); i++) {
                engine(engines.get(i), "dialog.engine[" + i + "]", p);
            }
        } else {
            engine(engines, "dialog.engine", p);
        }
        return p;
    }

    private static void engine(JsonNode e, String at, List<String> p) {
        if (!section(e, at, ENGINE, p)) {
            return;
        }
        JsonNode backend = e.path("backend");
        boolean posIdInBackend = false;
        if (section(backend, at + ".backend", BACKEND, p)) {
            String type = backend.path("type").asText();
            if (!Set.of("QnnHtp", "QnnGenAiTransformer", "QnnGpu").contains(type)) {
                p.add(at + ".backend.type: unsupported backend type '" + type + "'");
            }
            if (type.equals("QnnHtp") != backend.has("QnnHtp")) {
                p.add(at + ".backend: a QnnHtp section goes with type QnnHtp, and type QnnHtp needs one");
            }
            if (backend.has("QnnHtp")) {
                JsonNode htp = backend.path("QnnHtp");
                section(htp, at + ".backend.QnnHtp", QNN_HTP, p);
                posIdInBackend = htp.has("pos-id-dim") || htp.has("rope-theta");
            }
        }
        JsonNode model = e.path("model");
        if (section(model, at + ".model", MODEL, p)) {
            String type = model.path("type").asText();
            if (!type.equals("binary") && !type.equals("library")) {
                p.add(at + ".model.type: unsupported model type '" + type + "'");
            }
            if (type.equals("binary") != model.has("binary")) {
                p.add(at + ".model: a binary section goes with type binary, and type binary needs one");
            }
            if (model.has("binary") && section(model.path("binary"), at + ".model.binary", BINARY, p)) {
                JsonNode bins = model.path("binary").path("ctx-bins");
                if (bins.isEmpty()) {
                    p.add(at + ".model.binary.ctx-bins: no context binary");
                }
                bins.forEach(b -> {
                    if (!b.isTextual()) {
                        p.add(at + ".model.binary.ctx-bins: must be an array of strings");
                    }
                });
            }
            if (model.has("positional-encoding")) {
                JsonNode pe = model.path("positional-encoding");
                if (section(pe, at + ".model.positional-encoding", POSITIONAL, p)) {
                    if (!Set.of("rope", "absolute", "alibi").contains(pe.path("type").asText())) {
                        p.add(at + ".model.positional-encoding.type: must be rope, absolute or alibi");
                    }
                    if (pe.has("rope-scaling") && section(pe.path("rope-scaling"), at + ".model.positional-encoding.rope-scaling",
                            ROPE_SCALING, p) && !Set.of("llama3", "default", "longrope").contains(pe.path("rope-scaling").path("rope-type").asText())) {
                        p.add(at + ".model.positional-encoding.rope-scaling.rope-type: must be llama3, default or longrope");
                    }
                }
                if (posIdInBackend) {
                    p.add(at + ": give either pos-id-dim / rope-theta in QnnHtp or positional-encoding in model, not both");
                }
            }
        }
    }

    /** The section's own rules; false when it is not an object (nothing inside can be checked). */
    private static boolean section(JsonNode n, String at, Section s, List<String> p) {
        String where = at.isEmpty() ? "" : at + ".";
        if (!n.isObject()) {
            p.add((at.isEmpty() ? "the config" : at) + ": must be an object");
            return false;
        }
        for (String m : s.mandatory()) {
            if (!n.has(m)) {
                p.add(where + m + ": missing (mandatory)");
            }
        }
        n.properties().forEach(e -> {
            Kind k = s.keys().get(e.getKey());
            if (k == null) {
                p.add(where + e.getKey() + ": unknown key (Genie refuses any key it does not know)");
            } else if (!matches(k, e.getValue())) {
                p.add(where + e.getKey() + ": must be " + k.name().toLowerCase().replace('_', ' '));
            } else if (e.getKey().equals("version") && e.getValue().asInt() != 1) {
                p.add(where + "version: must be 1");
            }
        });
        return true;
    }

    private static boolean matches(Kind k, JsonNode v) {
        return switch (k) {
            case NUMBER -> v.isNumber();
            case STRING -> v.isTextual();
            case BOOLEAN -> v.isBoolean();
            case OBJECT -> v.isObject();
            case ARRAY -> v.isArray();
            case NUMBER_OR_ARRAY -> v.isNumber() || v.isArray();
            case OBJECT_OR_ARRAY -> v.isObject() || v.isArray();
        };
    }
}
