package dev.hexforge.compile.genie;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.hexforge.checkpoint.ModelConfig;
import dev.hexforge.compile.CompileException;
import dev.hexforge.compile.GraphIo;
import dev.hexforge.compile.Soc;
import dev.hexforge.onnx.export.ExportInfo;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * What a Genie bundle holds beside its context binaries ({@code <model>_part_<i>_of_<n>.bin}, one per part of the
 * Genie export, each with the part's prompt and token graphs sharing its weights): {@code genie_config.json} (the
 * model's config, the context length and the job's sampler; {@link GenieConfig}), {@code htp_backend_ext_config.json}
 * (the SoC; {@link HtpExtConfig}), {@code tokenizer.json}, and {@code metadata.json} naming every graph's inputs and
 * outputs with their shapes, element types and scale / offset, and the SDK that compiled them (a phone's QAIRT must be
 * at least as new). Planned, and so checked, before any SDK tool runs.
 */
public final class GenieBundle {
    public static final String METADATA = "metadata.json";
    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
    private final Path export;
    private final ExportInfo info;
    private final String stem;
    private final int parts;
    private final ObjectNode genieConfig;
    private final ObjectNode htpExt;

    private GenieBundle(Path export, ExportInfo info, String stem, int parts, ObjectNode genieConfig, ObjectNode htpExt) {
        this.export = export;
        this.info = info;
        this.stem = stem;
        this.parts = parts;
        this.genieConfig = genieConfig;
        this.htpExt = htpExt;
    }

    public static GenieBundle plan(Path export, ExportInfo info, Soc soc, GenieConfig.Sampler sampler) {
        if (!Files.isRegularFile(export.resolve(GenieConfig.TOKENIZER))) {
            throw new CompileException("the export has no " + GenieConfig.TOKENIZER + ", which Genie loads",
                    "export from a model folder that has its tokenizer.json");
        }
        ModelConfig c;
        try {
            c = ModelConfig.read(export);
        } catch (RuntimeException e) {
            throw new CompileException("the export's config.json is unreadable: " + e.getMessage(), "export the model again", e);
        }
        int parts = info.roles("prompt").size();
        if (info.roles("token").size() != parts) {
            throw new CompileException("the export has " + parts + " prompt parts and " + info.roles("token").size() + " token parts",
                    "export the model again");
        }
        String stem = stem(info.source());
        List<String> bins = new ArrayList<>();
        for (int p = 0; p < parts; p++) {
            bins.add(stem + "_part_" + (p + 1) + "_of_" + parts + ".bin");
        }
        return new GenieBundle(export, info, stem, parts, GenieConfig.of(c, info.contextLength(), sampler, bins), HtpExtConfig.of(soc));
    }

    /** The model's name as a file stem: letters, digits and underscores. */
    static String stem(String source) {
        String s = source == null ? "" : source.toLowerCase(Locale.ROOT).replaceAll("[^a-z0-9]+", "_").replaceAll("^_+|_+$", "");
        return s.isEmpty() ? "model" : s.length() > 64 ? s.substring(0, 64) : s;
    }

    public int parts() {
        return parts;
    }

    /** The {@code --binary_file} of part {@code p} (from 0): the context binary's name without {@code .bin}. */
    public String binaryName(int p) {
        return stem + "_part_" + (p + 1) + "_of_" + parts;
    }

    public String contextBinary(int p) {
        return binaryName(p) + ".bin";
    }

    /**
     * Writes the config files, the tokenizer and the metadata into {@code out}; the parts into {@code manifest}.
     *
     * @param names       each graph's name by role (prompt.0, token.0...)
     * @param ios         each graph's inputs and outputs by role
     * @param activations the export's activation encodings by tensor name
     */
    public void write(Path out, ObjectNode manifest, String qnnSdk, Map<String, String> names, Map<String, GraphIo> ios,
                      JsonNode activations) throws IOException {
        Files.writeString(out.resolve(GenieConfig.FILE), JSON.writeValueAsString(genieConfig));
        Files.writeString(out.resolve(HtpExtConfig.FILE), JSON.writeValueAsString(htpExt));
        Files.copy(export.resolve(GenieConfig.TOKENIZER), out.resolve(GenieConfig.TOKENIZER));
        if (Files.isRegularFile(export.resolve("tokenizer_config.json"))) {
            Files.copy(export.resolve("tokenizer_config.json"), out.resolve("tokenizer_config.json")); // its chat format, for the host
        }
        ObjectNode meta = JSON.createObjectNode();
        meta.put("model", info.source());
        meta.put("precision", info.precision());
        meta.put("contextLength", info.contextLength());
        meta.put("promptLength", info.promptLength());
        ObjectNode graphs = meta.putObject("graphs");
        ArrayNode partList = manifest.putArray("parts");
        for (int p = 0; p < parts; p++) {
            ObjectNode part = partList.addObject();
            part.put("file", contextBinary(p));
            ArrayNode partGraphs = part.putArray("graphs");
            for (String kind : List.of("prompt", "token")) {
                String role = kind + "." + p;
                String name = names.get(role);
                partGraphs.add(name);
                ObjectNode g = graphs.putObject(name);
                g.put("contextBinary", contextBinary(p));
                tensors(g.putArray("inputs"), ios.get(role).inputs(), activations);
                tensors(g.putArray("outputs"), ios.get(role).outputs(), activations);
            }
        }
        ObjectNode tools = meta.putObject("tools");
        tools.put("qairt", qnnSdk);
        tools.put("hexforge", info.hexforgeVersion());
        meta.put("note", "run with a QAIRT runtime at least as new as " + qnnSdk + " (an older one fails to load the context "
                + "binaries with error 5000)");
        Files.writeString(out.resolve(METADATA), JSON.writeValueAsString(meta));
    }

    /** Each tensor with its shape and, on the HTP, its element type and quantization (QNN's offset is −zero point). */
    private static void tensors(ArrayNode into, List<GraphIo.Tensor> tensors, JsonNode encodings) {
        for (GraphIo.Tensor t : tensors) {
            ObjectNode o = into.addObject();
            o.put("name", t.name());
            t.dims().forEach(o.putArray("shape")::add);
            JsonNode e = encodings.path(t.name()).path(0);
            if (e.isObject()) {
                o.put("dtype", "uint" + e.path("bitwidth").asInt());
                o.put("scale", e.path("scale").asDouble());
                o.put("offset", e.path("offset").asInt());
            } else {
                o.put("dtype", t.name().equals("input_ids") ? "int32" : "float32");
            }
        }
    }
}
