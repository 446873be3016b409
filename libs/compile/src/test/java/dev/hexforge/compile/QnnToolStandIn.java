package dev.hexforge.compile;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import dev.hexforge.onnx.proto.Onnx.ModelProto;
import dev.hexforge.onnx.qnn.Precision;
import dev.hexforge.onnx.qnn.QnnPreflight;

import java.util.HashMap;
import java.util.HashSet;
import java.util.Set;
import java.util.List;
import java.util.Map;

/**
 * TEST DOUBLE for the proprietary QNN SDK tools (absent here): {@code qnn-onnx-converter}, {@code qnn-model-lib-generator}
 * and {@code qnn-context-binary-generator}. It checks the contract the real tools have (flags, the files they read, the
 * shapes of every graph input, the triples and backend they take) and writes its outputs where the real tools write
 * them. Like the real converter run without an input list, it refuses a graph with an activation that no override in
 * {@code --quantization_overrides} covers (it would stay float), unless {@code --float_fallback}; and, like the HTP
 * backend, the context-binary generator refuses a model that kept float activations, and several graphs in one context
 * (comma-separated {@code --model} libraries, each graph named by its library's stem) unless the backend extension
 * config enables weight sharing; the {@code .bin} it writes names the graphs it holds. Every call is logged, one line
 * each, to {@code calls.log} in the SDK root. A file {@code standin-fail.txt} in the SDK root makes the converter fail with an error text of the kind the
 * real one prints ({@code unsupported-op NODE TYPE}, {@code dynamic INPUT}, {@code code NNNN}).
 */
public final class QnnToolStandIn {
    private QnnToolStandIn() {
    }

    /**
     * A stand-in QNN SDK at {@code sdk}: its version file, the host's HTP backend library, and the three tools as
     * scripts running this double on this JVM's class path.
     */
    public static Path install(Path sdk) throws java.io.IOException {
        Path bin = Files.createDirectories(sdk.resolve("bin/x86_64-linux-clang"));
        Files.createDirectories(sdk.resolve("lib/x86_64-linux-clang"));
        Files.writeString(sdk.resolve("lib/x86_64-linux-clang/libQnnHtp.so"), "stand-in backend");
        Files.writeString(sdk.resolve("sdk.yaml"), "name: qairt stand-in\nversion: 2.40.0.251030\n");
        String javaBin = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        for (String tool : List.of("qnn-onnx-converter", "qnn-model-lib-generator", "qnn-context-binary-generator")) {
            Path script = bin.resolve(tool);
            Files.writeString(script, "#!/bin/sh\n# TEST DOUBLE of the QNN SDK's " + tool + " (see QnnToolStandIn)\nexec '" + javaBin
                    + "' -cp '" + System.getProperty("java.class.path") + "' " + QnnToolStandIn.class.getName() + " '" + sdk + "' "
                    + tool + " \"$@\"\n");
            Files.setPosixFilePermissions(script, java.nio.file.attribute.PosixFilePermissions.fromString("rwxr-xr-x"));
        }
        return sdk;
    }

    public static void main(String[] args) throws Exception {
        Path sdk = Path.of(args[0]);
        String tool = args[1];
        Map<String, List<String>> opts = new HashMap<>();
        for (int i = 2; i < args.length; i++) {
            String k = args[i];
            if (!k.startsWith("-")) {
                die("unexpected argument " + k);
            }
            List<String> values = new ArrayList<>();
            while (i + 1 < args.length && !args[i + 1].startsWith("--") && !(args[i + 1].length() == 2 && args[i + 1].startsWith("-"))) {
                values.add(args[++i]);
            }
            opts.computeIfAbsent(k, x -> new ArrayList<>()).add(String.join(" ", values));
        }
        // every call, one line each, for the tests to read back
        Files.writeString(sdk.resolve("calls.log"), tool + " " + String.join(" ", java.util.Arrays.copyOfRange(args, 2, args.length))
                + "\n", java.nio.file.StandardOpenOption.CREATE, java.nio.file.StandardOpenOption.APPEND);
        switch (tool) {
            case "qnn-onnx-converter" -> converter(sdk, opts);
            case "qnn-model-lib-generator" -> libGenerator(opts);
            case "qnn-context-binary-generator" -> contextBinary(opts);
            default -> die("unknown tool " + tool);
        }
    }

    static void converter(Path sdk, Map<String, List<String>> o) throws Exception {
        Path onnx = Path.of(one(o, "--input_network"));
        if (!Files.isRegularFile(onnx)) {
            die("--input_network " + onnx + " does not exist");
        }
        Path cpp = Path.of(one(o, "--output_path"));
        if (!cpp.toString().endsWith(".cpp")) {
            die("--output_path must name a .cpp file");
        }
        Path fail = sdk.resolve("standin-fail.txt");
        if (Files.isRegularFile(fail)) {
            String[] f = Files.readString(fail).strip().split(" ");
            switch (f[0]) {
                case "unsupported-op" -> System.out.println("2026-12-02 12:00:00,000 - 235 - ERROR - Node " + f[1] + " (type " + f[2]
                        + ") is not supported by the HTP backend: op validation failed");
                case "dynamic" -> System.out.println("ERROR - QnnModel_addNode failed: error code 6036: dynamic tensor shape for input "
                        + f[1]);
                default -> System.out.println("ERROR - graph finalize failed with error code " + f[1]);
            }
            System.exit(1);
        }
        GraphIo io = GraphIo.read(onnx);
        Map<String, String> dims = new HashMap<>();
        for (String d : o.getOrDefault("--input_dim", List.of())) {
            String[] p = d.split(" ");
            dims.put(p[0], p[1]);
        }
        for (GraphIo.Tensor t : io.inputs()) {
            String given = dims.get(t.name());
            if (given == null) {
                die("6036: no --input_dim for input " + t.name());
            }
            if (!given.equals(t.dimsArg())) {
                die("--input_dim " + t.name() + " " + given + " does not match the graph's " + t.dimsArg());
            }
        }
        List<String> outs = o.getOrDefault("--out_node", List.of());
        for (GraphIo.Tensor t : io.outputs()) {
            if (!outs.contains(t.name())) {
                die("no --out_node for output " + t.name());
            }
        }
        if (!List.of("8", "16").contains(one(o, "--act_bitwidth")) || !List.of("4", "8").contains(one(o, "--weights_bitwidth"))) {
            die("--act_bitwidth 8|16 and --weights_bitwidth 4|8");
        }
        // the real converter calibrates activations from --input_list; without one, an activation no override covers
        // stays float (with --float_fallback) or fails the conversion
        Set<String> covered = new HashSet<>();
        if (o.containsKey("--quantization_overrides")) {
            JsonNode enc = new ObjectMapper().readTree(Path.of(one(o, "--quantization_overrides")).toFile());
            if (!enc.has("activation_encodings") || !enc.has("param_encodings")) {
                die("--quantization_overrides is not an AIMET encodings file");
            }
            Set<String> tensors = tensorNames(onnx);
            for (Map.Entry<String, JsonNode> e : enc.path("activation_encodings").properties()) {
                int bits = e.getValue().path(0).path("bitwidth").asInt();
                if (bits != 8 && bits != 16) {
                    die("activation encoding of " + e.getKey() + " has bitwidth " + bits + ": HTP activations are 8 or 16 bits");
                }
                if (tensors.contains(e.getKey())) {
                    covered.add(e.getKey());
                }
            }
        }
        List<String> uncovered = QnnPreflight.check(onnx, Precision.W8A16).floatActivations().stream()
                .filter(t -> !covered.contains(t)).toList();
        boolean floatFallback = o.containsKey("--float_fallback");
        if (!uncovered.isEmpty() && !o.containsKey("--input_list") && !floatFallback) {
            System.out.println("ERROR - No quantization encodings for activation tensor " + uncovered.get(0) + " (and "
                    + (uncovered.size() - 1) + " more): give --input_list to calibrate, or --quantization_overrides covering every "
                    + "activation");
            System.exit(1);
        }
        Files.writeString(cpp, "// converted from " + onnx.getFileName() + "\n" + (uncovered.isEmpty() ? "" : "// float-activations\n"));
        Files.write(cpp.resolveSibling(cpp.getFileName().toString().replace(".cpp", ".bin")), new byte[64]);
    }

    static void libGenerator(Map<String, List<String>> o) throws Exception {
        Path cpp = Path.of(one(o, "-c"));
        Path bin = Path.of(one(o, "-b"));
        if (!Files.isRegularFile(cpp) || !Files.isRegularFile(bin)) {
            die("-c model.cpp and -b model.bin must exist");
        }
        String triple = one(o, "-t");
        if (!List.of("x86_64-linux-clang", "aarch64-android").contains(triple)) {
            die("unknown target triple " + triple);
        }
        Path dir = Files.createDirectories(Path.of(one(o, "-o")).resolve(triple));
        String name = cpp.getFileName().toString().replace(".cpp", "");
        Files.writeString(dir.resolve("lib" + name + ".so"), "ELF " + triple + "\n"
                + (Files.readString(cpp).contains("float-activations") ? "float-activations\n" : ""));
    }

    static void contextBinary(Map<String, List<String>> o) throws Exception {
        Path backend = Path.of(one(o, "--backend"));
        if (!Files.isRegularFile(backend) || !backend.getFileName().toString().equals("libQnnHtp.so")) {
            die("--backend must be the SDK's libQnnHtp.so");
        }
        // several model libraries, comma-separated, go into one context; a graph is named by its library's stem
        List<String> graphs = new ArrayList<>();
        for (String m : one(o, "--model").split(",")) {
            Path model = Path.of(m);
            String file = model.getFileName().toString();
            if (!Files.isRegularFile(model) || !Files.readString(model).contains("x86_64-linux-clang") || !file.startsWith("lib")
                    || !file.endsWith(".so")) {
                die("--model must be model libraries (lib<graph>.so) built for the host (x86_64-linux-clang): " + m);
            }
            if (Files.readString(model).contains("float-activations")) {
                // the HTP backend runs quantized tensors only
                System.out.println("ERROR - QnnBackend_validateOpConfig failed: error code 3110: HTP does not support float32 activations");
                System.exit(1);
            }
            graphs.add(file.substring(3, file.length() - 3));
        }
        if (new HashSet<>(graphs).size() != graphs.size()) {
            die("two --model libraries define the same graph name: " + graphs);
        }
        Path out = Path.of(one(o, "--output_dir"));
        JsonNode cfg = new ObjectMapper().readTree(Path.of(one(o, "--config_file")).toFile());
        JsonNode ext = new ObjectMapper().readTree(Path.of(cfg.path("backend_extensions").path("config_file_path").asText()).toFile());
        String binary = one(o, "--binary_file");
        String names = ext.path("graphs").path(0).path("graph_names").toString();
        for (String g : graphs) {
            if (!names.contains("\"" + g + "\"")) {
                die("the HTP config's graph_names must name graph " + g + ", has " + names);
            }
        }
        if (!ext.path("devices").path(0).path("dsp_arch").asText().startsWith("v")) {
            die("the HTP config must name the device's dsp_arch");
        }
        boolean sharing = ext.path("context").path("weight_sharing_enabled").asBoolean(false);
        if (graphs.size() > 1 && !sharing) {
            System.out.println("ERROR - Failed to create context: " + graphs.size() + " graphs in one context need weight sharing "
                    + "(\"context\": {\"weight_sharing_enabled\": true} in the backend extension config)");
            System.exit(1);
        }
        Files.createDirectories(out);
        // what the context holds, for the tests to read back
        var bin = new ObjectMapper().createObjectNode();
        graphs.forEach(bin.putArray("graphs")::add);
        bin.put("weightSharing", sharing);
        bin.put("socModel", ext.path("devices").path(0).path("soc_model").asInt());
        bin.put("dspArch", ext.path("devices").path(0).path("dsp_arch").asText());
        Files.writeString(out.resolve(binary + ".bin"), bin.toString());
    }

    /** Every value name of the graph: inputs, outputs and node outputs. */
    private static Set<String> tensorNames(Path onnx) throws Exception {
        ModelProto m;
        try (var in = Files.newInputStream(onnx)) {
            m = ModelProto.parseFrom(in);
        }
        Set<String> names = new HashSet<>();
        m.getGraph().getInputList().forEach(v -> names.add(v.getName()));
        m.getGraph().getOutputList().forEach(v -> names.add(v.getName()));
        m.getGraph().getNodeList().forEach(n -> names.addAll(n.getOutputList()));
        return names;
    }

    private static String one(Map<String, List<String>> o, String key) {
        List<String> v = o.get(key);
        if (v == null || v.size() != 1) {
            die("expected exactly one " + key);
        }
        return v.get(0);
    }

    private static void die(String message) {
        System.out.println("standin contract violation: " + message);
        System.exit(2);
    }
}
