package dev.hexforge.devicerunner.adb;

import ai.onnxruntime.NodeInfo;
import ai.onnxruntime.OnnxTensor;
import ai.onnxruntime.OnnxJavaType;
import ai.onnxruntime.OrtEnvironment;
import ai.onnxruntime.OrtSession;
import ai.onnxruntime.TensorInfo;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * TEST DOUBLE of the QNN SDK's {@code qnn-net-run} for Android (no phone, no HTP here), run on the stand-in phone.
 * It checks the contract of the real tool: {@code --backend libQnnHtp.so} on the library path, {@code libQnnSystem.so}
 * there for {@code --retrieve_context}, the HTP stub on LD_LIBRARY_PATH and the skel of the context's architecture on
 * ADSP_LIBRARY_PATH, an input list with one inference a line naming every graph input ({@code name:=path}, names as
 * the QNN converter writes them) with float32 raw files of the input's exact size, {@code --output_dir},
 * {@code --profiling_level}. The context binary it retrieves is a stand-in too: a JSON naming the ONNX graph it was
 * "compiled" from, which this double runs with ONNX Runtime (CPU) so the outputs are real; it writes
 * {@code Result_N/<output>.raw} (float32) and {@code qnn-profiling-data.log} (measured times, key=value) where the
 * real tool writes them. A context with {@code "fail": "TEXT"} makes it fail printing TEXT, as the real one prints errors.
 */
public final class QnnNetRunStandIn {
    private QnnNetRunStandIn() {
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> o = new HashMap<>();
        for (int i = 0; i < args.length; i += 2) {
            if (!args[i].startsWith("--") || i + 1 >= args.length) {
                die("unexpected argument " + args[i]);
            }
            o.put(args[i], args[i + 1]);
        }
        for (String k : List.of("--backend", "--retrieve_context", "--input_list", "--output_dir", "--profiling_level")) {
            if (!o.containsKey(k)) {
                die("missing " + k);
            }
        }
        String ld = System.getenv().getOrDefault("LD_LIBRARY_PATH", "");
        String adsp = System.getenv().getOrDefault("ADSP_LIBRARY_PATH", "");
        if (!o.get("--backend").equals("libQnnHtp.so") || onPath(ld, "libQnnHtp.so") == null) {
            die("--backend libQnnHtp.so must be on LD_LIBRARY_PATH");
        }
        if (onPath(ld, "libQnnSystem.so") == null) {
            die("--retrieve_context needs libQnnSystem.so on LD_LIBRARY_PATH");
        }
        if (!List.of("basic", "detailed").contains(o.get("--profiling_level"))) {
            die("--profiling_level basic|detailed");
        }
        Path contextFile = Path.of(o.get("--retrieve_context"));
        if (!Files.isRegularFile(contextFile)) {
            die("--retrieve_context " + contextFile + " does not exist");
        }
        JsonNode context = new ObjectMapper().readTree(contextFile.toFile());
        int arch = context.path("htpArch").asInt();
        if (onPath(ld, "libQnnHtpV" + arch + "Stub.so") == null || onPath(adsp, "libQnnHtpV" + arch + "Skel.so") == null) {
            System.out.println("ERROR: Failed to load skel, error: 4000 (the HTP v" + arch + " stub / skel are not on LD_LIBRARY_PATH / ADSP_LIBRARY_PATH)");
            System.exit(1);
        }
        if (context.has("fail")) {
            System.out.println(context.path("fail").asText());
            System.exit(1);
        }
        long t0 = System.nanoTime();
        OrtEnvironment env = OrtEnvironment.getEnvironment();
        try (OrtSession session = env.createSession(context.path("onnx").asText(), new OrtSession.SessionOptions())) {
            double initUs = (System.nanoTime() - t0) / 1e3;
            Map<String, NodeInfo> inputs = session.getInputInfo();
            Map<String, String> byQnnName = new HashMap<>();
            inputs.keySet().forEach(n -> byQnnName.put(AdbQnnBackend.qnnName(n), n));
            Path out = Path.of(o.get("--output_dir"));
            List<String> lines = Files.readAllLines(Path.of(o.get("--input_list"))).stream().filter(l -> !l.isBlank()).toList();
            if (lines.isEmpty()) {
                die("the input list is empty");
            }
            double executeUs = 0;
            for (int r = 0; r < lines.size(); r++) {
                Map<String, OnnxTensor> feed = new HashMap<>();
                for (String part : lines.get(r).strip().split("\\s+")) {
                    String[] kv = part.split(":=", 2);
                    if (kv.length != 2 || !byQnnName.containsKey(kv[0])) {
                        die("line " + (r + 1) + ": '" + part + "' is not name:=path for an input of the graph " + byQnnName.keySet());
                    }
                    String name = byQnnName.get(kv[0]);
                    TensorInfo ti = (TensorInfo) inputs.get(name).getInfo();
                    long count = Arrays.stream(ti.getShape()).reduce(1, (a, b) -> a * b);
                    Path file = Path.of(kv[1]);
                    if (!Files.isRegularFile(file) || Files.size(file) != count * 4) {
                        die("line " + (r + 1) + ": " + kv[1] + " must be " + count * 4 + " bytes of float32 for " + kv[0]);
                    }
                    FloatBuffer f = ByteBuffer.wrap(Files.readAllBytes(file)).order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer();
                    if (ti.type == OnnxJavaType.INT32) {
                        int[] ints = new int[(int) count];
                        for (int i = 0; i < ints.length; i++) {
                            ints[i] = Math.round(f.get(i));
                        }
                        feed.put(name, OnnxTensor.createTensor(env, IntBuffer.wrap(ints), ti.getShape()));
                    } else {
                        feed.put(name, OnnxTensor.createTensor(env, f, ti.getShape()));
                    }
                }
                if (feed.size() != inputs.size()) {
                    die("line " + (r + 1) + " names " + feed.size() + " of the graph's " + inputs.size() + " inputs");
                }
                long a = System.nanoTime();
                try (OrtSession.Result res = session.run(feed)) {
                    executeUs += (System.nanoTime() - a) / 1e3;
                    Path dir = Files.createDirectories(out.resolve("Result_" + r));
                    for (var e : res) {
                        FloatBuffer fb = ((OnnxTensor) e.getValue()).getFloatBuffer();
                        ByteBuffer bytes = ByteBuffer.allocate(fb.remaining() * 4).order(ByteOrder.LITTLE_ENDIAN);
                        bytes.asFloatBuffer().put(fb);
                        Files.write(dir.resolve(AdbQnnBackend.qnnName(e.getKey()) + ".raw"), bytes.array());
                    }
                }
                feed.values().forEach(OnnxTensor::close);
            }
            double avg = executeUs / lines.size();
            Files.writeString(out.resolve("qnn-profiling-data.log"), "graph=" + context.path("graph").asText() + "\ninit_us="
                    + Math.round(initUs) + "\nexecute_us=" + Math.round(avg) + "\nrpc_us=" + Math.round(avg * 0.98) + "\naccel_us="
                    + Math.round(avg * 0.9) + "\n");
        }
        System.out.println("qnn-net-run (test double): " + o.get("--input_list") + " done");
    }

    private static Path onPath(String path, String lib) {
        for (String d : path.split(":")) {
            if (!d.isEmpty() && Files.isRegularFile(Path.of(d, lib))) {
                return Path.of(d, lib);
            }
        }
        return null;
    }

    private static void die(String message) {
        System.out.println("standin contract violation: " + message);
        System.exit(2);
    }
}
