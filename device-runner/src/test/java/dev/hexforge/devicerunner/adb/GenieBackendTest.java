package dev.hexforge.devicerunner.adb;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.hexforge.checkpoint.Checkpoint;
import dev.hexforge.checkpoint.ModelConfig;
import dev.hexforge.compile.Soc;
import dev.hexforge.compile.genie.GenieConfig;
import dev.hexforge.compile.genie.HtpExtConfig;
import dev.hexforge.contracts.BenchmarkResult;
import dev.hexforge.devicerunner.DeviceProfile;
import dev.hexforge.devicerunner.SignedBundle;
import dev.hexforge.eval.DeviceReference;
import dev.hexforge.forward.DecoderForward;
import dev.hexforge.forward.DecoderWeights;
import dev.hexforge.onnx.export.DecoderExporter;
import dev.hexforge.onnx.export.ExportInfo;
import dev.hexforge.onnx.export.ExportOptions;
import dev.hexforge.onnx.export.LinearFormat;
import dev.hexforge.onnx.export.Variant;
import dev.hexforge.signing.Keys;
import dev.hexforge.signing.ModelSignature;
import dev.hexforge.testing.Fixtures;
import dev.hexforge.tokenizer.Tokenizer;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyPair;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The genie backend against TEST DOUBLES of adb (an emulated phone) and genie-t2t-run ({@link GenieT2tRunStandIn}),
 * whose stand-in context binaries name the Genie export of qwen2-tiny that it runs with ONNX Runtime, so the text,
 * and so the token agreement, is real.
 */
class GenieBackendTest {
    static final String PHONE = "R5CX31GENIE";
    @TempDir
    static Path tmp;
    static Path phones;
    static Path sdk;
    static Adb adb;
    static KeyPair keys;
    static DeviceReference reference;
    static Path export;

    @BeforeAll
    static void phoneSdkAndExport() throws Exception {
        phones = tmp.resolve("phones");
        AdbQnnBackendTest.phone(phones, PHONE, "device", "SM-S9280", "SM8650", "Discharging");
        Path adbStandIn = AdbQnnBackendTest.executable(tmp.resolve("adb-standin"), AdbQnnBackendTest.resource("adb"));
        adb = new Adb(AdbQnnBackendTest.executable(tmp.resolve("adb"), "#!/bin/sh\nHEXFORGE_STANDIN_PHONES='" + phones + "' exec '"
                + adbStandIn + "' \"$@\"\n").toString());
        sdk = tmp.resolve("qairt");
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        AdbQnnBackendTest.executable(sdk.resolve("bin/aarch64-android/genie-t2t-run"), "#!/bin/sh\n# TEST DOUBLE of genie-t2t-run (see "
                + "GenieT2tRunStandIn)\nexec '" + java + "' -cp '" + System.getProperty("java.class.path") + "' "
                + GenieT2tRunStandIn.class.getName() + " \"$@\"\n");
        AdbQnnBackendTest.executable(sdk.resolve("bin/x86_64-linux-clang/qnn-onnx-converter"),
                "#!/bin/sh\necho 'TEST DOUBLE: qnn-onnx-converter is not run by the device runner' >&2\nexit 2\n");
        for (String lib : List.of("lib/aarch64-android/libGenie.so", "lib/aarch64-android/libQnnHtp.so", "lib/aarch64-android/libQnnSystem.so",
                "lib/aarch64-android/libQnnHtpNetRunExtensions.so", "lib/aarch64-android/libQnnHtpV75Stub.so",
                "lib/hexagon-v75/unsigned/libQnnHtpV75Skel.so")) {
            Files.createDirectories(sdk.resolve(lib).getParent());
            Files.writeString(sdk.resolve(lib), "ELF (test double)\n");
        }
        Files.writeString(sdk.resolve("sdk.yaml"), "version: 2.40.0.251030\n");
        export = tmp.resolve("genie-export");
        try (Checkpoint ckpt = Checkpoint.open(Fixtures.qwen2Tiny()); Tokenizer tok = Tokenizer.load(Fixtures.qwen2Tiny())) {
            DecoderExporter.export(ckpt, export, new ExportOptions(Variant.GENIE, 64, 512, 17, 2_000_000), LinearFormat.FLOAT, (w, d, t) -> { });
            reference = DeviceReference.compute(new DecoderForward(DecoderWeights.load(ckpt)), tok);
        }
        keys = Keys.generate();
    }

    /** A signed Genie bundle whose stand-in context binaries name the Genie export's graphs, built for {@code arch}. */
    static SignedBundle bundle(String name, String soc, String arch, String fail) throws Exception {
        ExportInfo info = ExportInfo.read(export);
        int n = info.roles("prompt").size();
        Path dir = Files.createDirectories(tmp.resolve(name));
        ObjectMapper json = new ObjectMapper();
        List<String> bins = new ArrayList<>();
        for (int p = 0; p < n; p++) {
            String bin = "qwen2_tiny_part_" + (p + 1) + "_of_" + n + ".bin";
            bins.add(bin);
            ObjectNode ctx = json.createObjectNode();
            ctx.put("standInContext", "a QNN context binary stand-in: the Genie export's graphs it was compiled from");
            ctx.putArray("graphs").add("prompt_ar64_cl512_" + (p + 1) + "_of_" + n).add("token_ar1_cl512_" + (p + 1) + "_of_" + n);
            ctx.put("export", export.toString());
            ctx.put("dspArch", arch);
            if (fail != null && p == 1) {
                ctx.put("fail", fail);
            }
            Files.writeString(dir.resolve(bin), json.writeValueAsString(ctx));
        }
        Files.writeString(dir.resolve(GenieConfig.FILE), json.writeValueAsString(GenieConfig.of(ModelConfig.read(export), 512,
                GenieConfig.Sampler.DEFAULT, bins)));
        Files.writeString(dir.resolve(HtpExtConfig.FILE), json.writeValueAsString(HtpExtConfig.of(Soc.find("SM8650").orElseThrow())));
        Files.copy(export.resolve("tokenizer.json"), dir.resolve("tokenizer.json"));
        ObjectNode m = json.createObjectNode();
        m.put("target", GenieBackend.TARGET);
        m.put("soc", soc);
        m.put("htpArch", 75);
        m.put("contextLength", 512);
        m.put("promptLength", 64);
        m.putObject("deviceMemory").put("weightBytes", 3_000_000L);
        Files.writeString(dir.resolve("manifest.json"), json.writeValueAsString(m));
        reference.write(dir);
        ModelSignature.sign(dir, keys.getPrivate(), dir.resolve("model.sig"), List.of());
        return SignedBundle.verify(dir, keys.getPublic());
    }

    @Test
    void aGenieBundleRunsOnThePhoneWithGenieT2tRunAndAgreesWithTheHost() throws Exception {
        SignedBundle bundle = bundle("task-1", "SM8650", "v75", null);
        BenchmarkResult r = new GenieBackend(adb, Phone.read(adb, PHONE), sdk).run(bundle, 64, 8, DeviceReference.read(bundle.dir()));
        assertEquals("genie", r.backend());
        assertTrue(r.device().contains(PHONE) && r.device().contains("Snapdragon 8 Gen 3"), r.device());
        assertEquals(1.0, r.tokenAgreement(), "the phone's greedy text is the host's continuation: " + r);
        assertEquals(64, r.promptLength(), "a prompt of the tokens asked for");
        assertTrue(r.newTokens() >= 1 && r.newTokens() <= 8, r.toString());
        assertTrue(r.decodeTokensPerSecond() > 0 && r.prefillTokensPerSecond() > 0 && r.timeToFirstTokenMs() > 0 && r.loadSeconds() > 0,
                "Genie's profile: " + r);
        assertTrue(r.peakRssBytes() != null && r.peakRssBytes() > 10_000_000, "genie-t2t-run's VmHWM on the phone: " + r);
        assertEquals(3_000_000L, r.weightBytesPerToken(), "the manifest's device memory: each part's weights once");
        assertEquals(r.decodeTokensPerSecond() * 3_000_000L / 76.8e9, r.efficiency(), 1e-12);
        assertNull(r.perplexity());
        assertTrue(r.notAvailable().get("perplexity").contains("text, not logits"), r.notAvailable().toString());
        assertEquals("light", r.thermalState());
        assertEquals(List.of(), List.of(Files.list(phones.resolve(PHONE + "/fs/data/local/tmp/hexforge")).toArray()),
                "nothing is left on the phone");
    }

    @Test
    void aBundleForAnotherSocOrTargetIsRefusedAndAGenieFailureIsExplained() throws Exception {
        GenieBackend backend = new GenieBackend(adb, Phone.read(adb, PHONE), sdk);
        IllegalArgumentException soc = assertThrows(IllegalArgumentException.class,
                () -> backend.run(bundle("task-2", "SM8550", "v73", null), 64, 4, reference));
        assertTrue(soc.getMessage().contains("5005") && soc.getMessage().contains("compile.soc: SM8650"), soc.getMessage());

        IllegalStateException arch = assertThrows(IllegalStateException.class,
                () -> backend.run(bundle("task-3", "SM8650", "v73", null), 64, 4, reference));
        assertTrue(arch.getMessage().contains("another device") && arch.getMessage().contains("compile.soc"), arch.getMessage());

        IllegalStateException old = assertThrows(IllegalStateException.class, () -> backend.run(bundle("task-4", "SM8650", "v75",
                "ERROR: Could not create context from binary: QnnContext_createFromBinary failed with error 5000"), 64, 4, reference));
        assertTrue(old.getMessage().contains("at least as new"), old.getMessage());
        assertEquals(List.of(), List.of(Files.list(phones.resolve(PHONE + "/fs/data/local/tmp/hexforge")).toArray()),
                "a failed run is cleaned up too");

        Path context = Files.createDirectories(tmp.resolve("ctx-bundle"));
        Files.writeString(context.resolve("manifest.json"), "{\"target\": \"qnn-context-binary\", \"soc\": \"SM8650\", \"htpArch\": 75}");
        ModelSignature.sign(context, keys.getPrivate(), context.resolve("model.sig"), List.of());
        IllegalArgumentException target = assertThrows(IllegalArgumentException.class,
                () -> backend.run(SignedBundle.verify(context, keys.getPublic()), 64, 4, reference));
        assertTrue(target.getMessage().contains("compile.target: genie"), target.getMessage());

        // under the context (449 of 512) but over Genie's dialog, the context less the AR-64 prompt graph
        IllegalArgumentException tooLong = assertThrows(IllegalArgumentException.class,
                () -> backend.run(bundle("task-5", "SM8650", "v75", null), 441, 8, reference));
        assertTrue(tooLong.getMessage().contains("a prompt of 441 tokens and 8 new ones exceed Genie's dialog limit "
                + "of 448 tokens (context 512 - prompt graph AR-64) of this bundle"), tooLong.getMessage());
    }

    @Test
    void aPhoneWithGenieInTheSdkOffersTheGenieBackend() {
        DeviceProfile p = DeviceProfile.phone(adb, Phone.read(adb, PHONE), sdk);
        assertTrue(p.backend("genie") != null && p.backend("adb-qnn") != null, p.backends().toString());
    }
}
