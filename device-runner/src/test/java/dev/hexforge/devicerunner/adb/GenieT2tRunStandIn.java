package dev.hexforge.devicerunner.adb;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.hexforge.compile.genie.GenieConfigRules;
import dev.hexforge.contracts.NpuLimits;
import dev.hexforge.generate.CausalLm;
import dev.hexforge.generate.Generator;
import dev.hexforge.onnx.export.ExportInfo;
import dev.hexforge.onnx.export.Variant;
import dev.hexforge.onnx.runtime.OnnxLm;
import dev.hexforge.tokenizer.Tokenizer;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * TEST DOUBLE of the QAIRT SDK's {@code genie-t2t-run} for Android (no phone, no HTP here), run on the stand-in phone.
 * It holds a run to the real tool's contract: {@code -c CONFIG}, the prompt as {@code -p TEXT} or
 * {@code --prompt_file FILE}, {@code --profile FILE} (refused when FILE exists, as the real tool refuses);
 * libGenie, libQnnHtp, libQnnSystem and the HTP stub of the config's architecture on LD_LIBRARY_PATH and its skel on
 * ADSP_LIBRARY_PATH; the config as Genie's loader takes it ({@link GenieConfigRules}), its tokenizer, backend
 * extension config (weight sharing on: each context holds two graphs) and context binaries present, every binary
 * built for the extension config's architecture (else error 5005) and holding part i of n's graphs under Genie's
 * names for the config's context size. The context binaries it loads are stand-ins too: JSON naming their graphs and
 * the Genie export they were compiled from, which this double runs with ONNX Runtime (CPU) exactly as Genie feeds it
 * ({@code StaticOnnxLm}), so the text is real; a binary with {@code "fail": "TEXT"} makes it fail printing TEXT. It
 * prints {@code [PROMPT]: ...} and {@code [BEGIN]: TEXT[END]} as the real tool does and writes Genie's profile JSON
 * with the times it measured.
 */
public final class GenieT2tRunStandIn {
    private static final ObjectMapper JSON = new ObjectMapper();

    private GenieT2tRunStandIn() {
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> o = new HashMap<>();
        for (int i = 0; i < args.length; i += 2) {
            if (!List.of("-c", "--config", "-p", "--prompt", "--prompt_file", "--profile").contains(args[i]) || i + 1 >= args.length) {
                die("unexpected argument " + args[i]);
            }
            o.put(args[i].equals("-c") ? "--config" : args[i].equals("-p") ? "--prompt" : args[i], args[i + 1]);
        }
        if (!o.containsKey("--config") || o.containsKey("--prompt") == o.containsKey("--prompt_file")) {
            die("-c CONFIG and one of -p PROMPT / --prompt_file FILE");
        }
        if (o.containsKey("--profile") && Files.exists(Path.of(o.get("--profile")))) {
            fail("ERROR: " + o.get("--profile") + " already exists");
        }
        String ld = System.getenv().getOrDefault("LD_LIBRARY_PATH", "");
        String adsp = System.getenv().getOrDefault("ADSP_LIBRARY_PATH", "");
        for (String lib : List.of("libGenie.so", "libQnnHtp.so", "libQnnSystem.so")) {
            if (!onPath(ld, lib)) {
                fail("CANNOT LINK EXECUTABLE \"genie-t2t-run\": library \"" + lib + "\" not found");
            }
        }
        JsonNode config = JSON.readTree(Path.of(o.get("--config")).toFile());
        List<String> problems = GenieConfigRules.check(config);
        if (!problems.isEmpty()) {
            fail("ERROR: Failed to create the dialog config: " + problems.get(0));
        }
        JsonNode dialog = config.path("dialog");
        JsonNode engine = dialog.path("engine");
        Path tokenizer = Path.of(dialog.path("tokenizer").path("path").asText());
        Path extFile = Path.of(engine.path("backend").path("extensions").asText());
        if (!Files.isRegularFile(tokenizer) || !Files.isRegularFile(extFile)) {
            fail("ERROR: Failed to create the dialog: cannot open " + (Files.isRegularFile(tokenizer) ? extFile : tokenizer));
        }
        JsonNode ext = JSON.readTree(extFile.toFile());
        String arch = ext.path("devices").path(0).path("dsp_arch").asText();
        if (!arch.matches("v\\d+") || !onPath(ld, "libQnnHtpV" + arch.substring(1) + "Stub.so")
                || !onPath(adsp, "libQnnHtpV" + arch.substring(1) + "Skel.so")) {
            fail("ERROR: QnnDevice_create failed: error 14001 (no HTP stub / skel for " + arch + ")");
        }
        if (!ext.path("context").path("weight_sharing_enabled").asBoolean(false)) {
            fail("ERROR: QnnContext_createFromBinary failed with error 5000: the contexts share weights, and weight_sharing_enabled is off");
        }
        int size = dialog.path("context").path("size").asInt();
        List<String> bins = new ArrayList<>();
        engine.path("model").path("binary").path("ctx-bins").forEach(b -> bins.add(b.asText()));
        Path export = null;
        for (int i = 0; i < bins.size(); i++) {
            Path bin = Path.of(bins.get(i));
            if (!Files.isRegularFile(bin)) {
                fail("ERROR: Failed to create the dialog: cannot open context binary " + bin);
            }
            JsonNode ctx = JSON.readTree(bin.toFile());
            if (ctx.has("fail")) {
                fail(ctx.path("fail").asText());
            }
            if (!arch.equals(ctx.path("dspArch").asText())) {
                fail("ERROR: QnnContext_createFromBinary failed with error 5005 (" + bin + " was built for " + ctx.path("dspArch").asText() + ")");
            }
            Set<String> graphs = new HashSet<>();
            ctx.path("graphs").forEach(g -> graphs.add(g.asText()));
            String part = "_cl" + size + "_" + (i + 1) + "_of_" + bins.size();
            if (graphs.size() != 2 || !graphs.contains("token_ar1" + part) || graphs.stream().noneMatch(g -> g.matches("prompt_ar\\d+" + part))) {
                fail("ERROR: Failed to create the dialog: " + bin + " does not hold part " + (i + 1) + " of " + bins.size()
                        + " for a context of " + size + " (graphs " + graphs + ")");
            }
            export = Path.of(ctx.path("export").asText());
        }
        ExportInfo info = ExportInfo.read(export);
        if (info.variant() != Variant.GENIE || info.contextLength() != size) {
            fail("ERROR: the stand-in context names an export that is not Genie's layout for a context of " + size);
        }
        String prompt = o.containsKey("--prompt") ? o.get("--prompt") : Files.readString(Path.of(o.get("--prompt_file")));

        long t0 = System.nanoTime();
        try (CausalLm lm = OnnxLm.open(export, 1); Tokenizer tok = Tokenizer.load(tokenizer.toAbsolutePath().getParent())) {
            long created = System.nanoTime();
            int[] ids = tok.encode(prompt);
            JsonNode sampler = dialog.path("sampler");
            int topK = sampler.path("top-k").asInt(40);
            Set<Integer> stop = new HashSet<>();
            JsonNode eos = dialog.path("context").path("eos-token");
            if (eos.isArray()) {
                eos.forEach(e -> stop.add(e.asInt()));
            } else {
                stop.add(eos.asInt());
            }
            int max = Math.min(dialog.path("max-num-tokens").asInt(size), size - ids.length);
            if (ids.length + max > NpuLimits.genieDialogTokens(size, info.promptLength())) {
                // the real tool does not fail here: QAIRT 2.49-2.50's Genie stalls; the double says so instead
                fail("ERROR: stand-in: a dialog of " + ids.length + " + " + max + " tokens reaches past "
                        + NpuLimits.genieDialogLimit(size, info.promptLength()) + ", where Genie stalls");
            }
            Generator.Options opt = new Generator.Options(max, topK == 1, sampler.path("temp").asDouble(0.8), topK,
                    sampler.path("top-p").asDouble(0.95), sampler.path("seed").asLong(42), stop);
            long[] first = {0};
            long start = System.nanoTime();
            int[] out = Generator.generate(lm, ids, opt, t -> {
                if (first[0] == 0) {
                    first[0] = System.nanoTime();
                }
            });
            long end = System.nanoTime();
            System.out.println("Using libGenie.so version 1.0.0 (TEST DOUBLE)\n\n[PROMPT]: " + prompt + "\n");
            System.out.println("[BEGIN]: " + tok.decode(out) + "[END]\n");
            if (o.containsKey("--profile")) {
                double ttft = (first[0] - start) / 1e3;
                double gen = Math.max(1, (end - first[0]) / 1e3);
                ObjectNode root = JSON.createObjectNode();
                ObjectNode header = root.putObject("header");
                header.putObject("header_version").put("major", 0).put("minor", 1).put("patch", 0);
                header.putObject("version").put("major", 0).put("minor", 1).put("patch", 0);
                header.put("artifact_type", "GENIE_PROFILE");
                root.putObject("metadata").put("timestamp", System.currentTimeMillis());
                ObjectNode component = root.putArray("components").addObject();
                component.put("name", "dialog0");
                component.put("type", "dialog");
                ArrayNode events = component.putArray("events");
                ObjectNode create = events.addObject();
                create.put("type", "GenieDialog_create");
                metric(create, "init-time", (created - t0) / 1e3, "us");
                ObjectNode query = events.addObject();
                query.put("type", "GenieDialog_query");
                metric(query, "num-prompt-tokens", ids.length, "");
                metric(query, "prompt-processing-rate", ids.length / (ttft / 1e6), "toks/sec");
                metric(query, "time-to-first-token", ttft, "us");
                metric(query, "num-generated-tokens", out.length, "");
                metric(query, "token-generation-rate", Math.max(0, out.length - 1) / (gen / 1e6), "toks/sec");
                metric(query, "token-generation-time", gen, "us");
                Files.writeString(Path.of(o.get("--profile")), JSON.writeValueAsString(root));
            }
        }
    }

    private static void metric(ObjectNode event, String name, double value, String unit) {
        event.putObject(name).put("value", value).put("unit", unit);
    }

    private static boolean onPath(String path, String lib) {
        for (String d : path.split(":")) {
            if (!d.isEmpty() && Files.isRegularFile(Path.of(d, lib))) {
                return true;
            }
        }
        return false;
    }

    private static void fail(String message) {
        System.out.println(message);
        System.exit(1);
    }

    private static void die(String message) {
        System.out.println("standin contract violation: " + message);
        System.exit(2);
    }
}
