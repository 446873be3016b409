package dev.hexforge.devicerunner.adb;

import com.fasterxml.jackson.databind.JsonNode;
import dev.hexforge.compile.QnnTriage;
import dev.hexforge.contracts.BenchmarkResult;
import dev.hexforge.devicerunner.SignedBundle;
import dev.hexforge.eval.DeviceReference;
import dev.hexforge.eval.Perplexity;
import dev.hexforge.onnx.export.ExportInfo;
import dev.hexforge.onnx.runtime.StaticInputs;

import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

/**
 * The {@code adb-qnn} backend: a phone attached over USB runs a {@code qnn-context-binary} bundle with the QNN SDK's
 * own {@code qnn-net-run}. The bundle's context binaries, the SDK's runtime for the phone (qnn-net-run, libQnnHtp,
 * libQnnSystem, the HTP stub and skel of the context's architecture) and the input files go to
 * {@code /data/local/tmp/hexforge/<task>/}; the prompt graph runs the reference's teacher-forced sequence and the
 * perplexity windows (one inference a line of the input list), the token graph runs {@code newTokens} steps; both
 * with {@code --retrieve_context} and {@code --profiling_level basic}. The logits and profiling logs come back with
 * {@code adb pull}, the logs are read with the host's {@code qnn-profile-viewer}, and the folder on the phone is
 * removed. Inputs and outputs are qnn-net-run's default float32 raw files (it converts them to and from the graph's
 * quantized types). Peak memory is qnn-net-run's VmHWM sampled from {@code /proc} on the phone, energy the battery's
 * current × voltage sampled during the token run (only when the phone is not charging), the thermal state
 * {@code dumpsys thermalservice}'s status after the runs.
 */
public final class AdbQnnBackend extends PhoneBackend {
    public static final String NAME = "adb-qnn";
    public static final String TARGET = "qnn-context-binary";
    public static final String REMOTE_BASE = "/data/local/tmp/hexforge/";

    /** @param sdk the QNN SDK (QAIRT) root on this host: the phone's runtime is pushed from it, its profile viewer run here */
    public AdbQnnBackend(Adb adb, Phone phone, Path sdk) {
        super(adb, phone, sdk);
    }

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public BenchmarkResult run(SignedBundle bundle, int promptLength, int newTokens, DeviceReference reference) {
        JsonNode manifest = manifest(bundle.dir(), TARGET, TARGET + " bundles", 5000);
        int arch = manifest.path("htpArch").asInt();
        Map<String, String> graphFiles = Map.of("prompt", graphFile(manifest, "prompt"), "token", graphFile(manifest, "token"));
        ExportInfo info = ExportInfo.read(bundle.dir());
        Map<String, String> notAvailable = new LinkedHashMap<>();
        String remote = remote(bundle);
        Path stage = null;
        try {
            stage = Files.createTempDirectory("hexforge-adb-qnn");
            Plan plan = plan(info, reference, notAvailable);
            writeInputs(stage, info, plan, Math.max(1, newTokens));
            Files.writeString(stage.resolve("run.sh"), RUN_SCRIPT);
            adb.shell(phone.serial(), "rm -rf " + remote + " && mkdir -p " + remote, 60);
            for (Path f : runtime(arch)) {
                adb.push(phone.serial(), f, remote + "/" + f.getFileName());
            }
            for (String g : List.of("prompt", "token")) {
                adb.push(phone.serial(), bundle.dir().resolve(graphFiles.get(g)), remote + "/" + g + ".bin");
            }
            try (var files = Files.list(stage)) {
                for (Path f : files.toList()) {
                    adb.push(phone.serial(), f, remote + "/" + (Files.isDirectory(f) ? "" : f.getFileName()));
                }
            }
            String batteryStatus = readings.batteryStatus();
            execute(remote, "prompt");
            execute(remote, "token");
            QnnProfile prompt = profile(remote, "prompt", stage);
            QnnProfile token = profile(remote, "token", stage);
            String thermal = readings.thermal();
            if (thermal == null) {
                notAvailable.put("thermalState", "dumpsys thermalservice printed no Thermal Status");
            }

            Double agreement = null;
            Double ppl = null;
            int line = 0;
            if (plan.agreement) {
                agreement = reference.agreement(pullLogits(remote, stage, line++, info), info.vocabSize());
            }
            if (plan.windows > 0) {
                double nll = 0;
                long scored = 0;
                int w = reference.perplexityWindow();
                for (int k = 0; k < plan.windows; k++) {
                    nll += Perplexity.windowNll(pullLogits(remote, stage, line++, info),
                            Arrays.copyOfRange(reference.perplexityIds(), k * w, (k + 1) * w));
                    scored += w - 1;
                }
                ppl = Math.exp(nll / scored);
            }
            Long rss = readings.peak(remote + "/prompt.hwm", remote + "/token.hwm");
            if (rss == null) {
                notAvailable.put("peakRssBytes", "no VmHWM samples of qnn-net-run came back from the phone");
            }
            double decodeTps = 1e6 / token.executeMicros();
            Double joules = readings.energyPerToken(remote + "/token.power", batteryStatus, token.executeMicros() / 1e6, notAvailable);
            long weights = Files.size(bundle.dir().resolve(graphFiles.get("token")));
            Roofline roof = roofline(notAvailable);
            Map<String, Double> timings = new LinkedHashMap<>();
            timings.put("token graph (NetRun)", token.executeMicros() / 1e3);
            token.executeBreakdownMicros().forEach((k, v) -> timings.put(k, v / 1e3));
            return new BenchmarkResult(NAME, phone.describe(), bundle.rootDigest(), info.promptLength(), newTokens,
                    prompt.initMicros() / 1e6, prompt.executeMicros() / 1e3, info.promptLength() / (prompt.executeMicros() / 1e6),
                    decodeTps, rss, weights, roof.bytesPerSecond(), roof.source(), roof.efficiency(decodeTps, weights), agreement, ppl,
                    ppl == null ? null : reference.perplexity(), 0, timings, joules, thermal, notAvailable);
        } catch (IOException e) {
            throw new UncheckedIOException("staging the adb-qnn run: " + e.getMessage(), e);
        } finally {
            cleanUp(remote, stage);
        }
    }

    /** What the prompt graph's input list holds: the teacher-forced reference sequence, then the perplexity windows. */
    private record Plan(boolean agreement, int windows, DeviceReference reference) {
    }

    private static Plan plan(ExportInfo info, DeviceReference ref, Map<String, String> notAvailable) {
        int seq = info.promptLength();
        boolean agreement = false;
        int windows = 0;
        if (ref == null) {
            notAvailable.put("tokenAgreement", "the bundle has no " + DeviceReference.FILE);
            notAvailable.put("perplexity", "the bundle has no " + DeviceReference.FILE);
        } else {
            if (ref.teacherForcedSequence().length <= seq) {
                agreement = true;
            } else {
                notAvailable.put("tokenAgreement", "the reference sequence (" + ref.teacherForcedSequence().length
                        + " tokens) is longer than the prompt graph (" + seq + ")");
            }
            if (!ref.hasPerplexity()) {
                notAvailable.put("perplexity", "the bundle's reference has no text to score");
            } else if (ref.perplexityWindow() > seq) {
                notAvailable.put("perplexity", "the reference's window (" + ref.perplexityWindow() + " tokens) is longer than the prompt graph ("
                        + seq + "); qnn-net-run cannot carry a KV cache between runs");
            } else {
                windows = ref.perplexityIds().length / ref.perplexityWindow();
            }
        }
        return new Plan(agreement, windows, ref);
    }

    /** Float32 raw files for every input of both graphs, and their input lists (names as the QNN converter writes them). */
    private static void writeInputs(Path stage, ExportInfo info, Plan plan, int tokenRuns) throws IOException {
        Path in = Files.createDirectories(stage.resolve("inputs"));
        int seq = info.promptLength();
        int ctx = info.contextLength();
        List<int[]> promptRuns = new ArrayList<>();
        if (plan.agreement) {
            promptRuns.add(plan.reference.teacherForcedSequence());
        }
        for (int k = 0; k < plan.windows; k++) {
            int w = plan.reference.perplexityWindow();
            promptRuns.add(Arrays.copyOfRange(plan.reference.perplexityIds(), k * w, (k + 1) * w));
        }
        if (promptRuns.isEmpty()) {
            promptRuns.add(new SplittableRandom(1).ints(seq, 10, Math.min(1000, info.vocabSize())).toArray());
        }
        for (String g : List.of("prompt", "token")) {
            int n = g.equals("prompt") ? seq : 1;
            writeFloats(in.resolve(g + "_mask.raw"), StaticInputs.mask(0, n, ctx, info.maskNegative()));
            writeFloats(in.resolve(g + "_positions.raw"), toFloats(StaticInputs.positions(0, n, ctx)));
            writeFloats(in.resolve(g + "_past.raw"), new float[info.numKvHeads() * (ctx - n) * info.headDim()]);
        }
        StringBuilder list = new StringBuilder();
        for (int r = 0; r < promptRuns.size(); r++) {
            writeFloats(in.resolve("prompt_ids_" + r + ".raw"), toFloats(StaticInputs.ids(promptRuns.get(r), seq)));
            list.append(line(info, "prompt", "inputs/prompt_ids_" + r + ".raw")).append('\n');
        }
        Files.writeString(stage.resolve("prompt_inputs.txt"), list);
        writeFloats(in.resolve("token_ids.raw"), new float[]{7});
        Files.writeString(stage.resolve("token_inputs.txt"), (line(info, "token", "inputs/token_ids.raw") + "\n").repeat(tokenRuns));
    }

    private static String line(ExportInfo info, String g, String ids) {
        List<String> parts = new ArrayList<>();
        parts.add(qnnName("input_ids") + ":=" + ids);
        parts.add(qnnName("position_ids") + ":=inputs/" + g + "_positions.raw");
        parts.add(qnnName("attention_mask") + ":=inputs/" + g + "_mask.raw");
        for (int l = 0; l < info.numLayers(); l++) {
            for (String kv : List.of("key", "value")) {
                parts.add(qnnName("past_key_values." + l + "." + kv) + ":=inputs/" + g + "_past.raw");
            }
        }
        return String.join(" ", parts);
    }

    /** The tensor name the QNN converter gives an ONNX name: characters outside [A-Za-z0-9_] become '_'. */
    public static String qnnName(String onnxName) {
        String s = onnxName.replaceAll("[^A-Za-z0-9_]", "_");
        return Character.isDigit(s.charAt(0)) ? "_" + s : s;
    }

    private List<Path> runtime(int arch) {
        Path android = sdk.resolve("lib").resolve("aarch64-android");
        return sdkFiles(List.of(sdk.resolve("bin/aarch64-android/qnn-net-run"), android.resolve("libQnnHtp.so"),
                android.resolve("libQnnSystem.so"), android.resolve("libQnnHtpV" + arch + "Stub.so"),
                sdk.resolve("lib/hexagon-v" + arch + "/unsigned/libQnnHtpV" + arch + "Skel.so")), "run HTP v" + arch
                + " contexts on the phone", "Android and Hexagon v" + arch + " libraries");
    }

    private static String graphFile(JsonNode manifest, String graph) {
        String f = manifest.path("graphs").path(graph).path("file").asText(null);
        if (f == null && manifest.path("graphs").has(graph + ".0")) {
            throw new IllegalArgumentException("this bundle's graphs are split into parts (the model exceeds one HTP graph); adb-qnn "
                    + "runs single-graph bundles, since qnn-net-run cannot hand hidden states from one context to the next: "
                    + "benchmark it with ort-qnn");
        }
        if (f == null) {
            throw new IllegalArgumentException("the bundle's manifest names no " + graph + " graph: the static export has prompt and token graphs");
        }
        return f;
    }

    /** Runs one graph; a failure is explained (QNN error code or log line to cause and fix) where the triage knows it. */
    private void execute(String remote, String graph) {
        try {
            adb.shell(phone.serial(), "sh " + remote + "/run.sh " + graph, 3600);
        } catch (AdbException e) {
            String why = QnnTriage.explain(e.getMessage())
                    .map(d -> ": " + d.cause() + ". Fix: " + d.fix()).orElse("");
            throw new IllegalStateException("qnn-net-run failed on " + phone.describe() + " running the " + graph + " graph" + why + "\n"
                    + e.getMessage(), e);
        }
    }

    private QnnProfile profile(String remote, String graph, Path stage) throws IOException {
        String log = adb.shell(phone.serial(), "cat " + remote + "/" + graph + ".log 2>/dev/null; true", 60);
        Path local = stage.resolve(graph + "-profile.log");
        // qnn-profiling-data.log, or qnn-profiling-data_0.log from newer SDKs
        String written = adb.shell(phone.serial(), "ls " + remote + "/out_" + graph + "/ | grep '^qnn-profiling-data.*[.]log$' | head -n 1; true",
                60).strip();
        if (written.isEmpty()) {
            throw new AdbException("qnn-net-run wrote no profiling log for the " + graph + " graph (run with --profiling_level basic); it printed: "
                    + log.strip());
        }
        adb.pull(phone.serial(), remote + "/out_" + graph + "/" + written, local);
        List<String> cmd = List.of(sdk.resolve("bin/x86_64-linux-clang/qnn-profile-viewer").toString(), "--input_log", local.toString());
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        try {
            if (!p.waitFor(5, TimeUnit.MINUTES) || p.exitValue() != 0) {
                throw new AdbException("qnn-profile-viewer failed on the " + graph + " run's log: " + out.strip() + "\nqnn-net-run printed: " + log.strip());
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AdbException("interrupted while reading the profile", e);
        }
        return QnnProfile.parse(out);
    }

    private float[][] pullLogits(String remote, Path stage, int line, ExportInfo info) throws IOException {
        Path local = stage.resolve("logits_" + line + ".raw");
        adb.pull(phone.serial(), remote + "/out_prompt/Result_" + line + "/" + qnnName("logits") + ".raw", local);
        int seq = info.promptLength();
        int vocab = info.vocabSize();
        byte[] bytes = Files.readAllBytes(local);
        if (bytes.length != (long) seq * vocab * Float.BYTES) {
            throw new IllegalStateException("qnn-net-run wrote " + bytes.length + " bytes of logits for run " + line + ", not " + seq + " x "
                    + vocab + " float32");
        }
        FloatBuffer fb = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer();
        float[][] rows = new float[seq][vocab];
        for (float[] row : rows) {
            fb.get(row);
        }
        return rows;
    }

    private static float[] toFloats(int[] ints) {
        float[] f = new float[ints.length];
        for (int i = 0; i < ints.length; i++) {
            f[i] = ints[i];
        }
        return f;
    }

    private static void writeFloats(Path file, float[] values) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(values.length * Float.BYTES).order(ByteOrder.LITTLE_ENDIAN);
        b.asFloatBuffer().put(values);
        try (OutputStream out = Files.newOutputStream(file)) {
            out.write(b.array());
        }
    }

    /**
     * Runs one graph on the phone: qnn-net-run in the background while its peak memory (VmHWM) and the battery's
     * current and voltage are sampled every 50 ms; exits with qnn-net-run's status.
     */
    static final String RUN_SCRIPT = PhoneReadings.SAMPLE + """
            # hexforge: run one graph with qnn-net-run ($1: prompt or token)
            cd "$(dirname "$0")" || exit 1
            export LD_LIBRARY_PATH="$PWD:$LD_LIBRARY_PATH"
            export ADSP_LIBRARY_PATH="$PWD"
            g="$1"
            rm -rf "out_$g" "$g.hwm" "$g.power"
            chmod 755 ./qnn-net-run
            ./qnn-net-run --backend libQnnHtp.so --retrieve_context "$g.bin" --input_list "${g}_inputs.txt" \\
                --output_dir "out_$g" --profiling_level basic > "$g.log" 2>&1 &
            p=$!
            sample "$p" "$g"
            wait "$p"
            rc=$?
            if [ "$rc" != 0 ]; then cat "$g.log"; echo "qnn-net-run exited with $rc"; fi
            exit "$rc"
            """;
}
