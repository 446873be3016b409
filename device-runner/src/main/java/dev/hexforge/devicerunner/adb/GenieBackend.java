package dev.hexforge.devicerunner.adb;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.hexforge.compile.QnnTriage;
import dev.hexforge.compile.genie.GenieConfig;
import dev.hexforge.compile.genie.GenieConfigRules;
import dev.hexforge.compile.genie.HtpExtConfig;
import dev.hexforge.contracts.BenchmarkResult;
import dev.hexforge.contracts.NpuLimits;
import dev.hexforge.devicerunner.SignedBundle;
import dev.hexforge.eval.DeviceReference;
import dev.hexforge.tokenizer.Tokenizer;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The {@code genie} backend: a phone attached over USB runs a Genie bundle ({@code compile.target: genie}) with the
 * QAIRT SDK's own {@code genie-t2t-run}. The bundle, the SDK's runtime for the phone ({@code genie-t2t-run},
 * libGenie, libQnnHtp, libQnnSystem, the HTP backend extensions, the HTP stub and skel of the bundle's architecture)
 * go to {@code /data/local/tmp/hexforge/<task>/}, with a copy of the bundle's {@code genie_config.json} that samples
 * greedily and stops after the tokens asked for. Two runs, each with {@code --profile}: a prompt of
 * {@code promptLength} tokens generating {@code newTokens} (load time, time to first token, prompt and token rates
 * from Genie's profile; peak memory and battery draw sampled on the phone), and the host reference's prompt, whose
 * generated text, tokenized on the host, is compared with the reference's greedy continuation (token agreement).
 * Genie returns text, not logits, so no perplexity. A failed run's output goes through {@link QnnTriage} (5000: the
 * phone's QAIRT older than the bundle's; 5005: another SoC; 1002 / VTCM: memory).
 */
public final class GenieBackend extends PhoneBackend {
    public static final String NAME = "genie";
    public static final String TARGET = "genie";
    public static final String TOOL = "genie-t2t-run";

    /** @param sdk the QAIRT SDK root on this host: the phone's runtime is pushed from it */
    public GenieBackend(Adb adb, Phone phone, Path sdk) {
        super(adb, phone, sdk);
    }

    /** Whether the SDK at {@code sdk} has Genie for Android (the tool and its library). */
    public static boolean available(Path sdk) {
        return Files.isRegularFile(sdk.resolve("bin/aarch64-android").resolve(TOOL))
                && Files.isRegularFile(sdk.resolve("lib/aarch64-android/libGenie.so"));
    }

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public BenchmarkResult run(SignedBundle bundle, int promptLength, int newTokens, DeviceReference reference) {
        Path dir = bundle.dir();
        JsonNode manifest = manifest(dir, TARGET, "Genie bundles", 5005);
        for (String f : List.of(GenieConfig.FILE, HtpExtConfig.FILE, GenieConfig.TOKENIZER)) {
            if (!Files.isRegularFile(dir.resolve(f))) {
                throw new IllegalArgumentException("the Genie bundle has no " + f);
            }
        }
        int arch = manifest.path("htpArch").asInt();
        int context = manifest.path("contextLength").asInt();
        int ar = manifest.path("promptLength").asInt();
        if (promptLength + newTokens > NpuLimits.genieDialogTokens(context, ar)) {
            throw new IllegalArgumentException("a prompt of " + promptLength + " tokens and " + newTokens + " new ones exceed "
                    + NpuLimits.genieDialogLimit(context, ar) + " of this bundle: lower benchmark.promptLength or newTokens");
        }
        Map<String, String> notAvailable = new LinkedHashMap<>();
        notAvailable.put("perplexity", "genie-t2t-run returns text, not logits");
        notAvailable.put("referencePerplexity", "genie-t2t-run returns text, not logits");
        String remote = remote(bundle);
        Path stage = null;
        try (Tokenizer tok = Tokenizer.load(dir)) {
            stage = Files.createTempDirectory("hexforge-genie");
            Files.writeString(stage.resolve("run.sh"), RUN_SCRIPT);
            Files.writeString(stage.resolve("speed.json"), JSON.writeValueAsString(benchConfig(dir, newTokens)));
            Files.writeString(stage.resolve("speed.txt"), prompt(tok, promptLength));
            boolean agreement = reference != null && reference.continuation().length > 0;
            if (agreement) {
                Files.writeString(stage.resolve("agreement.json"), JSON.writeValueAsString(benchConfig(dir, reference.continuation().length)));
                Files.writeString(stage.resolve("agreement.txt"), tok.decode(reference.prompt()));
            } else {
                notAvailable.put("tokenAgreement", "the bundle has no " + DeviceReference.FILE);
            }
            adb.shell(phone.serial(), "rm -rf " + remote + " && mkdir -p " + remote, 60);
            for (Path f : runtime(arch)) {
                adb.push(phone.serial(), f, remote + "/" + f.getFileName());
            }
            for (Path d : List.of(dir, stage)) {
                try (var files = Files.list(d)) {
                    for (Path f : files.filter(Files::isRegularFile).toList()) {
                        adb.push(phone.serial(), f, remote + "/" + f.getFileName());
                    }
                }
            }
            String battery = readings.batteryStatus();
            String output = execute(remote, "speed");
            GenieProfile speed = profile(remote, "speed", stage);
            Double tokenAgreement = null;
            if (agreement) {
                String text = generated(execute(remote, "agreement"));
                tokenAgreement = agreement(tok, reference, text);
            }
            String thermal = readings.thermal();
            if (thermal == null) {
                notAvailable.put("thermalState", "dumpsys thermalservice printed no Thermal Status");
            }
            Long rss = readings.peak(remote + "/speed.hwm", remote + "/agreement.hwm");
            if (rss == null) {
                notAvailable.put("peakRssBytes", "no VmHWM samples of genie-t2t-run came back from the phone");
            }
            if (generated(output).isEmpty() || speed.generatedTokens() == 0) {
                throw new IllegalStateException("genie-t2t-run generated nothing on " + phone.describe() + ":\n" + output);
            }
            double decodeTps = speed.tokensPerSecond();
            Double joules = readings.energyPerToken(remote + "/speed.power", battery, 1 / decodeTps, notAvailable);
            long weights = manifest.path("deviceMemory").path("weightBytes").asLong();
            Roofline roof = roofline(notAvailable);
            Map<String, Double> timings = new LinkedHashMap<>();
            timings.put("prompt (Genie)", speed.timeToFirstTokenMicros() / 1e3);
            timings.put("token (Genie, mean)", speed.generationMicros() / 1e3 / speed.generatedTokens());
            return new BenchmarkResult(NAME, phone.describe(), bundle.rootDigest(), speed.promptTokens(), speed.generatedTokens(),
                    speed.initMicros() / 1e6, speed.timeToFirstTokenMicros() / 1e3, speed.promptTokensPerSecond(), decodeTps, rss,
                    weights, roof.bytesPerSecond(), roof.source(), roof.efficiency(decodeTps, weights), tokenAgreement, null, null, 0,
                    timings, joules,
                    thermal, notAvailable);
        } catch (IOException e) {
            throw new UncheckedIOException("staging the genie run: " + e.getMessage(), e);
        } finally {
            cleanUp(remote, stage);
        }
    }

    /** The bundle's Genie config sampling greedily (top-k 1) and stopping after {@code tokens} generated tokens. */
    static ObjectNode benchConfig(Path dir, int tokens) throws IOException {
        ObjectNode config = (ObjectNode) JSON.readTree(dir.resolve(GenieConfig.FILE).toFile());
        ObjectNode dialog = (ObjectNode) config.path("dialog");
        dialog.put("max-num-tokens", tokens);
        ObjectNode sampler = dialog.has("sampler") ? (ObjectNode) dialog.path("sampler") : dialog.putObject("sampler");
        sampler.put("version", 1);
        sampler.put("top-k", 1);
        List<String> problems = GenieConfigRules.check(config);
        if (!problems.isEmpty()) {
            throw new IllegalArgumentException("the bundle's " + GenieConfig.FILE + " would not load in Genie: " + problems);
        }
        return config;
    }

    /** A prompt of {@code length} tokens: the reference's perplexity text, repeated as needed, cut at that many tokens. */
    static String prompt(Tokenizer tok, int length) {
        int[] text = tok.encode(DeviceReference.PERPLEXITY_TEXT);
        int[] ids = new int[length];
        for (int i = 0; i < length; i++) {
            ids[i] = text[i % text.length];
        }
        return tok.decode(ids);
    }

    /** The text genie-t2t-run printed between {@code [BEGIN]: } and {@code [END]}. */
    static String generated(String output) {
        int b = output.indexOf("[BEGIN]:");
        int e = output.lastIndexOf("[END]");
        if (b < 0 || e < b) {
            return "";
        }
        String text = output.substring(b + "[BEGIN]:".length(), e);
        return text.startsWith(" ") ? text.substring(1) : text;
    }

    /**
     * The share of the reference's greedy continuation the phone's text repeats, token by token: the text is
     * tokenized after the prompt on the host, as the prompt and the text together would be.
     */
    static double agreement(Tokenizer tok, DeviceReference reference, String text) {
        String prompt = tok.decode(reference.prompt());
        int[] promptIds = tok.encode(prompt);
        int[] all = tok.encode(prompt + text);
        int[] device = all.length >= promptIds.length && Arrays.equals(Arrays.copyOf(all, promptIds.length), promptIds)
                ? Arrays.copyOfRange(all, promptIds.length, all.length) : tok.encode(text);
        int[] expected = reference.continuation();
        int same = 0;
        for (int i = 0; i < expected.length && i < device.length; i++) {
            if (device[i] == expected[i]) {
                same++;
            }
        }
        return (double) same / expected.length;
    }

    private List<Path> runtime(int arch) {
        Path android = sdk.resolve("lib").resolve("aarch64-android");
        return sdkFiles(List.of(sdk.resolve("bin/aarch64-android").resolve(TOOL), android.resolve("libGenie.so"),
                android.resolve("libQnnHtp.so"), android.resolve("libQnnSystem.so"), android.resolve("libQnnHtpNetRunExtensions.so"),
                android.resolve("libQnnHtpV" + arch + "Stub.so"), sdk.resolve("lib/hexagon-v" + arch + "/unsigned/libQnnHtpV" + arch + "Skel.so")),
                "run a Genie bundle for HTP v" + arch + " on the phone", "Genie, Android and Hexagon v" + arch + " libraries");
    }

    /** One run on the phone; what it printed, or a failure explained where the triage knows it. */
    private String execute(String remote, String run) {
        try {
            adb.shell(phone.serial(), "sh " + remote + "/run.sh " + run, 3600);
            return adb.shell(phone.serial(), "cat " + remote + "/" + run + ".log", 60);
        } catch (AdbException e) {
            String why = QnnTriage.explain(e.getMessage()).map(d -> ": " + d.cause() + ". Fix: " + d.fix()).orElse("");
            throw new IllegalStateException(TOOL + " failed on " + phone.describe() + " (" + run + " run)" + why + "\n" + e.getMessage(), e);
        }
    }

    private GenieProfile profile(String remote, String run, Path stage) {
        Path local = stage.resolve(run + "-profile.json");
        adb.pull(phone.serial(), remote + "/" + run + "-profile.json", local);
        try {
            return GenieProfile.parse(Files.readString(local));
        } catch (IOException e) {
            throw new UncheckedIOException("reading Genie's profile: " + e.getMessage(), e);
        }
    }

    /**
     * Runs genie-t2t-run on the phone ($1: speed or agreement: its config, prompt and outputs are named so) while its
     * peak memory and the battery's draw are sampled; exits with genie-t2t-run's status, printing its output on failure.
     */
    static final String RUN_SCRIPT = PhoneReadings.SAMPLE + """
            # hexforge: one genie-t2t-run ($1: speed or agreement)
            cd "$(dirname "$0")" || exit 1
            export LD_LIBRARY_PATH="$PWD:$LD_LIBRARY_PATH"
            export ADSP_LIBRARY_PATH="$PWD"
            r="$1"
            rm -f "$r.log" "$r.hwm" "$r.power" "$r-profile.json"
            chmod 755 ./genie-t2t-run
            ./genie-t2t-run -c "$r.json" --prompt_file "$r.txt" --profile "$r-profile.json" > "$r.log" 2>&1 &
            p=$!
            sample "$p" "$r"
            wait "$p"
            rc=$?
            if [ "$rc" != 0 ]; then cat "$r.log"; echo "genie-t2t-run exited with $rc"; fi
            exit "$rc"
            """;
}
