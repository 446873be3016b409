package dev.hexforge.devicerunner.adb;

import dev.hexforge.contracts.BenchmarkResult;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.hexforge.checkpoint.Checkpoint;
import dev.hexforge.devicerunner.SignedBundle;
import dev.hexforge.eval.DeviceReference;
import dev.hexforge.forward.DecoderForward;
import dev.hexforge.forward.DecoderWeights;
import dev.hexforge.onnx.export.DecoderExporter;
import dev.hexforge.onnx.export.ExportInfo;
import dev.hexforge.onnx.export.ExportOptions;
import dev.hexforge.onnx.export.LinearFormat;
import dev.hexforge.signing.Keys;
import dev.hexforge.signing.ModelSignature;
import dev.hexforge.testing.Fixtures;
import dev.hexforge.tokenizer.Tokenizer;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.KeyPair;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The adb-qnn backend against TEST DOUBLES of adb (two emulated phones), qnn-net-run and qnn-profile-viewer
 * (see {@link QnnNetRunStandIn} and {@code standin/}); the stand-in qnn-net-run runs the graphs a stand-in context
 * names with ONNX Runtime, so accuracy figures are real.
 */
class AdbQnnBackendTest {
    static final String PHONE = "R5CX31ABCDE";
    static final String LOCKED = "9A271FFAZ001";
    @TempDir
    static Path tmp;
    static Path sdk;
    static Path phones;
    static Adb adb;
    static KeyPair keys;
    static DeviceReference reference;

    @BeforeAll
    static void phonesSdkAndBundle() throws Exception {
        phones = tmp.resolve("phones");
        phone(PHONE, "device", "SM-S9280", "SM8650", "Discharging");
        phone(LOCKED, "unauthorized", "Pixel 8", "", "Charging");
        Path adbStandIn = executable(tmp.resolve("adb-standin"), resource("adb"));
        adb = new Adb(executable(tmp.resolve("adb"), "#!/bin/sh\nHEXFORGE_STANDIN_PHONES='" + phones + "' exec '" + adbStandIn + "' \"$@\"\n").toString());

        sdk = tmp.resolve("qairt");
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        executable(sdk.resolve("bin/aarch64-android/qnn-net-run"), "#!/bin/sh\n# TEST DOUBLE of qnn-net-run (see QnnNetRunStandIn)\nexec '"
                + java + "' -cp '" + System.getProperty("java.class.path") + "' " + QnnNetRunStandIn.class.getName() + " \"$@\"\n");
        executable(sdk.resolve("bin/x86_64-linux-clang/qnn-profile-viewer"), resource("qnn-profile-viewer"));
        // present only so the folder is recognised as an SDK (QnnSdk's check); the runner never converts, so it refuses to run
        executable(sdk.resolve("bin/x86_64-linux-clang/qnn-onnx-converter"),
                "#!/bin/sh\necho 'TEST DOUBLE: qnn-onnx-converter is not run by the device runner' >&2\nexit 2\n");
        for (String lib : List.of("lib/aarch64-android/libQnnHtp.so", "lib/aarch64-android/libQnnSystem.so",
                "lib/aarch64-android/libQnnHtpV75Stub.so", "lib/hexagon-v75/unsigned/libQnnHtpV75Skel.so")) {
            Files.createDirectories(sdk.resolve(lib).getParent());
            Files.writeString(sdk.resolve(lib), "ELF (test double)\n");
        }
        Files.writeString(sdk.resolve("sdk.yaml"), "version: 2.28.0.241029\n");

        Path export = tmp.resolve("export");
        try (Checkpoint ckpt = Checkpoint.open(Fixtures.qwen2Tiny()); Tokenizer tok = Tokenizer.load(Fixtures.qwen2Tiny())) {
            DecoderExporter.export(ckpt, export, ExportOptions.staticShapes(64, 256), LinearFormat.FLOAT, (w, d, t) -> { });
            reference = DeviceReference.compute(new DecoderForward(DecoderWeights.load(ckpt)), tok);
        }
        keys = Keys.generate();
    }

    /** A signed qnn-context-binary bundle whose stand-in contexts name the static export's graphs. */
    static SignedBundle bundle(String name, String soc, String fail) throws Exception {
        Path export = tmp.resolve("export");
        ExportInfo info = ExportInfo.read(export);
        Path dir = Files.createDirectories(tmp.resolve(name));
        ObjectMapper json = new ObjectMapper();
        ObjectNode m = json.createObjectNode();
        m.put("target", AdbQnnBackend.TARGET);
        m.put("soc", soc);
        m.put("htpArch", 75);
        m.put("contextLength", info.contextLength());
        m.put("promptLength", info.promptLength());
        m.put("qnnSdk", "2.28.0.241029");
        ObjectNode graphs = m.putObject("graphs");
        for (String g : List.of("prompt", "token")) {
            graphs.putObject(g).put("file", g + ".bin");
            ObjectNode ctx = json.createObjectNode();
            ctx.put("standInContext", "a QNN context binary stand-in: the graph it was compiled from");
            ctx.put("graph", g);
            ctx.put("onnx", info.graph(export, g).toString());
            ctx.put("htpArch", 75);
            if (fail != null && g.equals("prompt")) {
                ctx.put("fail", fail);
            }
            Files.writeString(dir.resolve(g + ".bin"), json.writeValueAsString(ctx));
        }
        Files.writeString(dir.resolve("manifest.json"), json.writeValueAsString(m));
        Files.copy(export.resolve(ExportInfo.FILE), dir.resolve(ExportInfo.FILE));
        reference.write(dir);
        ModelSignature.sign(dir, keys.getPrivate(), dir.resolve("model.sig"), List.of());
        return SignedBundle.verify(dir, keys.getPublic());
    }

    @Test
    void attachedPhonesAreFoundEachWithItsSerialModelAndSoc() {
        List<Adb.Attached> attached = adb.devices();
        assertEquals(2, attached.size(), attached.toString());
        Adb.Attached ready = attached.stream().filter(a -> a.serial().equals(PHONE)).findFirst().orElseThrow();
        assertTrue(ready.ready() && ready.model().equals("SM-S9280"), ready.toString());
        assertEquals("unauthorized", attached.stream().filter(a -> a.serial().equals(LOCKED)).findFirst().orElseThrow().state());
        Phone p = Phone.read(adb, PHONE);
        assertEquals("SM8650", p.soc());
        assertEquals(75, p.knownSoc().orElseThrow().htpArch());
        assertEquals(11_811_160_064L, p.ramBytes());
        AdbException locked = assertThrows(AdbException.class, () -> Phone.read(adb, LOCKED));
        assertTrue(locked.getMessage().contains("unauthorized"), locked.getMessage());
        assertEquals(75, dev.hexforge.devicerunner.DeviceProfile.phone(adb, p, sdk).htpArch());
    }

    @Test
    void aContextBundleRunsOnThePhoneWithQnnNetRunAndAgreesWithTheHost() throws Exception {
        SignedBundle bundle = bundle("task-1", "SM8650", null);
        BenchmarkResult r = new AdbQnnBackend(adb, Phone.read(adb, PHONE), sdk).run(bundle, 64, 8, DeviceReference.read(bundle.dir()));
        assertEquals("adb-qnn", r.backend());
        assertTrue(r.device().contains(PHONE) && r.device().contains("Snapdragon 8 Gen 3"), r.device());
        assertEquals(1.0, r.tokenAgreement(), "the phone's greedy tokens are the host's: " + r);
        assertEquals(reference.perplexity(), r.perplexity(), reference.perplexity() * 1e-4, "the phone scores the text as the host: " + r);
        assertEquals(reference.perplexity(), r.referencePerplexity());
        assertTrue(r.decodeTokensPerSecond() > 0 && r.prefillTokensPerSecond() > 0 && r.timeToFirstTokenMs() > 0 && r.loadSeconds() > 0, r.toString());
        assertEquals(64, r.promptLength());
        assertTrue(r.peakRssBytes() != null && r.peakRssBytes() > 10_000_000, "qnn-net-run's VmHWM on the phone: " + r);
        assertEquals(76.8e9, r.memoryBandwidthBytesPerSecond());
        assertEquals(Files.size(bundle.dir().resolve("token.bin")), r.weightBytesPerToken());
        assertEquals(r.decodeTokensPerSecond() * r.weightBytesPerToken() / 76.8e9, r.efficiency(), 1e-12);
        assertEquals(0, r.opsOffNpu(), "a context binary runs whole on the HTP");
        assertTrue(r.opTimingsMs().containsKey("QNN accelerator (execute) time"), r.opTimingsMs().toString());
        assertEquals("light", r.thermalState());
        assertNull(r.joulesPerToken());
        assertTrue(r.notAvailable().get("energyPerToken").contains("battery current"), r.notAvailable().toString());
        assertEquals(List.of(), List.of(Files.list(phones.resolve(PHONE + "/fs/data/local/tmp/hexforge")).toArray()),
                "nothing is left on the phone");
    }

    @Test
    void aBundleForAnotherSocTargetOrSplitIntoPartsIsRefusedAndAQnnFailureIsExplained() throws Exception {
        AdbQnnBackend backend = new AdbQnnBackend(adb, Phone.read(adb, PHONE), sdk);
        IllegalArgumentException soc = assertThrows(IllegalArgumentException.class,
                () -> backend.run(bundle("task-2", "SM8550", null), 64, 4, reference));
        assertTrue(soc.getMessage().contains("SM8550") && soc.getMessage().contains("compile.soc: SM8650"), soc.getMessage());

        IllegalStateException oom = assertThrows(IllegalStateException.class, () -> backend.run(bundle("task-3", "SM8650",
                "<E> Failed to allocate memory for graph prompt: QnnContext_createFromBinary failed with error code 1002"), 64, 4, reference));
        assertTrue(oom.getMessage().contains("ran out of memory") && oom.getMessage().contains("split the model"), oom.getMessage());
        assertEquals(List.of(), List.of(Files.list(phones.resolve(PHONE + "/fs/data/local/tmp/hexforge")).toArray()),
                "a failed run is cleaned up too");

        SignedBundle whole = bundle("task-4", "SM8650", null);
        ObjectNode m = (ObjectNode) new ObjectMapper().readTree(whole.dir().resolve("manifest.json").toFile());
        ObjectNode parts = m.putObject("graphs");
        for (String role : List.of("prompt.0", "prompt.1", "token.0", "token.1")) {
            parts.putObject(role).put("file", role.replace('.', '_') + ".bin");
        }
        Files.writeString(whole.dir().resolve("manifest.json"), new ObjectMapper().writeValueAsString(m));
        Files.delete(whole.dir().resolve("model.sig"));
        ModelSignature.sign(whole.dir(), keys.getPrivate(), whole.dir().resolve("model.sig"), List.of());
        IllegalArgumentException split = assertThrows(IllegalArgumentException.class,
                () -> backend.run(SignedBundle.verify(whole.dir(), keys.getPublic()), 64, 4, reference));
        assertTrue(split.getMessage().contains("split into parts") && split.getMessage().contains("ort-qnn"), split.getMessage());

        Path plain = tmp.resolve("plain");
        Files.createDirectories(plain);
        Files.copy(tmp.resolve("export").resolve(ExportInfo.FILE), plain.resolve(ExportInfo.FILE));
        ModelSignature.sign(plain, keys.getPrivate(), plain.resolve("model.sig"), List.of());
        IllegalArgumentException target = assertThrows(IllegalArgumentException.class,
                () -> backend.run(SignedBundle.verify(plain, keys.getPublic()), 64, 4, reference));
        assertTrue(target.getMessage().contains("qnn-context-binary"), target.getMessage());
    }

    static void phone(String serial, String state, String model, String soc, String battery) throws Exception {
        phone(phones, serial, state, model, soc, battery);
    }

    /** An emulated phone under {@code root} for the adb stand-in. */
    static void phone(Path root, String serial, String state, String model, String soc, String battery) throws Exception {
        Path p = Files.createDirectories(root.resolve(serial));
        Files.writeString(p.resolve("state"), state);
        Files.writeString(p.resolve("props"), "ro.product.model=" + model + "\nro.product.name=" + model.replace(' ', '_')
                + "\nro.soc.model=" + soc + "\nro.board.platform=pineapple\nro.build.version.release=15\n");
        Files.createDirectories(p.resolve("fs/data/local/tmp/hexforge"));
        Files.createDirectories(p.resolve("fs/proc"));
        Files.writeString(p.resolve("fs/proc/meminfo"), "MemTotal:       11534336 kB\nMemFree:         2000000 kB\n");
        Files.createDirectories(p.resolve("fs/sys/class/power_supply/battery"));
        Files.writeString(p.resolve("fs/sys/class/power_supply/battery/status"), battery + "\n");
        executable(p.resolve("fs/system/bin/dumpsys"), "#!/bin/sh\n[ \"$1\" = thermalservice ] || exit 1\n"
                + "echo 'IsStatusOverride: false'\necho 'ThermalEventListeners:'\necho 'Thermal Status: 1'\n");
    }

    static String resource(String name) throws Exception {
        try (var in = AdbQnnBackendTest.class.getResourceAsStream("/standin/" + name)) {
            return new String(in.readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
        }
    }

    static Path executable(Path file, String text) throws Exception {
        Files.createDirectories(file.getParent());
        Files.writeString(file, text);
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rwxr-xr-x"));
        return file;
    }
}
