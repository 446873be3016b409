package dev.hexforge.signing;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyPair;
import java.security.Signature;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Iterator;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ModelSignatureTest {
    static final ObjectMapper JSON = new ObjectMapper();
    @TempDir
    Path tmp;
    Path vector;
    Path model;
    KeyPair keys;

    static Path fixtures() {
        String p = System.getProperty("hexforge.fixtures");
        return p != null ? Path.of(p) : Path.of("../../fixtures");
    }

    @BeforeEach
    void setUp() throws Exception {
        vector = fixtures().resolve("oms-v1.1.0-elliptic-key");
        model = Files.createDirectories(tmp.resolve("my-model"));
        Files.writeString(model.resolve("config.json"), "{\"a\": 1}");
        Files.createDirectories(model.resolve("onnx"));
        Files.write(model.resolve("onnx/model.onnx_data"), new byte[100_000]);
        Files.writeString(model.resolve("onnx/model.onnx"), "graph");
        keys = Keys.generate();
    }

    void sign() {
        ModelSignature.sign(model, keys.getPrivate(), model.resolve("model.sig"), List.of());
    }

    String refused(Path dir, List<String> ignore) {
        return assertThrows(VerificationException.class,
                () -> ModelSignature.verify(dir, keys.getPublic(), dir.resolve("model.sig"), ignore)).getMessage();
    }

    @Test
    void theSigstoreKnownAnswerVectorVerifies() {
        Path dir = vector.resolve("model");
        ModelSignature.Verified v = ModelSignature.verify(dir, Keys.readPublic(vector.resolve("signing-key-pub.pem")),
                dir.resolve("model.sig"), List.of("ignore-me"));
        assertEquals("92745110b1ab4368471cbe31664e10174e954b113a3df333db860317b2c6dec4", v.rootDigest());
        assertEquals(2, v.files().size());
    }

    @Test
    void theKnownAnswerVectorFailsAfterAnyChange() throws Exception {
        Path copy = Files.createDirectories(tmp.resolve("vector"));
        for (String f : List.of("signme-1", "signme-2", "ignore-me", "model.sig")) {
            Files.copy(vector.resolve("model").resolve(f), copy.resolve(f));
        }
        var pub = Keys.readPublic(vector.resolve("signing-key-pub.pem"));
        byte[] orig = Files.readAllBytes(copy.resolve("signme-1"));
        byte[] changed = orig.clone();
        changed[0] ^= 1;
        Files.write(copy.resolve("signme-1"), changed);
        VerificationException e = assertThrows(VerificationException.class,
                () -> ModelSignature.verify(copy, pub, copy.resolve("model.sig"), List.of("ignore-me")));
        assertTrue(e.getMessage().contains("'signme-1' was modified"), e.getMessage());
        Files.write(copy.resolve("signme-1"), orig);
        String bundle = Files.readString(copy.resolve("model.sig"));
        Files.writeString(copy.resolve("model.sig"), bundle.replace("MGUCMQCV", "MGUCMQCW"));
        e = assertThrows(VerificationException.class, () -> ModelSignature.verify(copy, pub, copy.resolve("model.sig"), List.of("ignore-me")));
        assertTrue(e.getMessage().contains("signature does not match"), e.getMessage());
    }

    @Test
    void ourBundleHasTheReferenceStructure() throws Exception {
        sign();
        JsonNode ours = JSON.readTree(model.resolve("model.sig").toFile());
        JsonNode ref = JSON.readTree(vector.resolve("model/model.sig").toFile());
        assertEquals(fieldPaths(ref), fieldPaths(ours));
        assertEquals(ref.path("mediaType"), ours.path("mediaType"));
        assertEquals(ref.at("/dsseEnvelope/payloadType"), ours.at("/dsseEnvelope/payloadType"));
        assertEquals(Keys.hint(keys.getPublic()), ours.at("/verificationMaterial/publicKey/hint").asText());
        assertTrue(ours.at("/verificationMaterial/publicKey/hint").asText().matches("[0-9a-f]{64}"));
        JsonNode st = JSON.readTree(Base64.getDecoder().decode(ours.at("/dsseEnvelope/payload").asText()));
        JsonNode refSt = JSON.readTree(Base64.getDecoder().decode(ref.at("/dsseEnvelope/payload").asText()));
        assertEquals(fieldPaths(refSt), fieldPaths(st));
        assertEquals("my-model", st.at("/subject/0/name").asText());
        assertEquals(List.of("config.json", "onnx/model.onnx", "onnx/model.onnx_data"),
                List.of(st.at("/predicate/resources/0/name").asText(), st.at("/predicate/resources/1/name").asText(),
                        st.at("/predicate/resources/2/name").asText()));
        // the signature is DER ECDSA over the DSSE PAE with SHA-256 for P-256
        Signature s = Signature.getInstance("SHA256withECDSA");
        s.initVerify(keys.getPublic());
        s.update(ModelSignature.pae(ModelSignature.PAYLOAD_TYPE, Base64.getDecoder().decode(ours.at("/dsseEnvelope/payload").asText())));
        assertTrue(s.verify(Base64.getDecoder().decode(ours.at("/dsseEnvelope/signatures/0/sig").asText())));
        // the hint matches what the reference computed for its key
        assertEquals(ref.at("/verificationMaterial/publicKey/hint").asText(),
                Keys.hint(Keys.readPublic(vector.resolve("signing-key-pub.pem"))));
    }

    static List<String> fieldPaths(JsonNode n) {
        List<String> out = new ArrayList<>();
        collect(n, "", out);
        return out.stream().map(p -> p.replaceAll("/\\d+", "/#")).distinct().sorted().toList();
    }

    static void collect(JsonNode n, String path, List<String> out) {
        if (n.isObject()) {
            for (Iterator<String> it = n.fieldNames(); it.hasNext(); ) {
                String f = it.next();
                collect(n.get(f), path + "/" + f, out);
            }
        } else if (n.isArray()) {
            for (int i = 0; i < n.size(); i++) {
                collect(n.get(i), path + "/" + i, out);
            }
            out.add(path + "[]");
        } else {
            out.add(path);
        }
    }

    @Test
    void aSignedFolderVerifies() {
        sign();
        ModelSignature.Verified v = ModelSignature.verify(model, keys.getPublic(), model.resolve("model.sig"), List.of());
        assertEquals(3, v.files().size());
    }

    @Test
    void tamperingIsRefusedWithTheReason() throws Exception {
        sign();
        Files.write(model.resolve("onnx/model.onnx_data"), new byte[]{1}, java.nio.file.StandardOpenOption.APPEND);
        assertTrue(refused(model, List.of()).contains("'onnx/model.onnx_data' was modified"));
    }

    @Test
    void renamedAddedAndRemovedFilesAreRefused() throws Exception {
        sign();
        Files.move(model.resolve("config.json"), model.resolve("config2.json"));
        assertTrue(refused(model, List.of()).contains("'config2.json' is not in the signed manifest"));
        Files.move(model.resolve("config2.json"), model.resolve("config.json"));
        Files.writeString(model.resolve("extra.txt"), "x");
        assertTrue(refused(model, List.of()).contains("'extra.txt' is not in the signed manifest"));
        Files.delete(model.resolve("extra.txt"));
        Files.delete(model.resolve("onnx/model.onnx"));
        assertTrue(refused(model, List.of()).contains("'onnx/model.onnx' is signed but missing"));
    }

    @Test
    void aWrongKeyIsRefused() {
        sign();
        KeyPair other = Keys.generate();
        VerificationException e = assertThrows(VerificationException.class,
                () -> ModelSignature.verify(model, other.getPublic(), model.resolve("model.sig"), List.of()));
        assertTrue(e.getMessage().contains("signature does not match"), e.getMessage());
    }

    @Test
    void aValidlySignedStatementWithTheWrongRootDigestIsRefused() throws Exception {
        sign();
        Path sig = model.resolve("model.sig");
        ObjectNode bundle = (ObjectNode) JSON.readTree(sig.toFile());
        ObjectNode st = (ObjectNode) JSON.readTree(Base64.getDecoder().decode(bundle.at("/dsseEnvelope/payload").asText()));
        ((ObjectNode) st.at("/subject/0/digest")).put("sha256", "00".repeat(32));
        byte[] payload = st.toString().getBytes(StandardCharsets.UTF_8);
        Signature s = Signature.getInstance("SHA256withECDSA");
        s.initSign(keys.getPrivate());
        s.update(ModelSignature.pae(ModelSignature.PAYLOAD_TYPE, payload));
        ObjectNode env = (ObjectNode) bundle.get("dsseEnvelope");
        env.put("payload", Base64.getEncoder().encodeToString(payload));
        ((ObjectNode) env.get("signatures").get(0)).put("sig", Base64.getEncoder().encodeToString(s.sign()));
        Files.writeString(sig, bundle.toString());
        assertTrue(refused(model, List.of()).contains("root digest"));
    }

    @Test
    void unsignedFoldersAndSymlinksAreRefused() throws Exception {
        assertTrue(refused(model, List.of()).contains("not signed"));
        Files.createSymbolicLink(model.resolve("link"), model.resolve("config.json"));
        SigningException e = assertThrows(SigningException.class, this::sign);
        assertTrue(e.getMessage().contains("symbolic link 'link'"), e.getMessage());
    }

    @Test
    void keysRoundTripThroughPemAndThePublicHalfIsDerived() throws Exception {
        Path priv = tmp.resolve("key.pem");
        Files.writeString(priv, Keys.privatePem(keys.getPrivate()));
        assertEquals(keys.getPublic(), Keys.publicOf(Keys.readPrivate(priv)));
    }

    @Test
    void aBundleSignedFromKnownDigestsVerifiesLikeOneSignedFromTheFiles() throws Exception {
        Manifest known = FolderHasher.hash(model, FolderHasher.ignoreList(ModelSignature.DEFAULT_SIGNATURE, List.of()));
        List<Manifest.Entry> shuffled = new ArrayList<>(known.files());
        java.util.Collections.reverse(shuffled);
        Files.write(model.resolve("model.sig"), ModelSignature.signManifest("my-model", new Manifest(shuffled), keys.getPrivate()));
        ModelSignature.Verified v = ModelSignature.verify(model, keys.getPublic(), model.resolve("model.sig"), List.of());
        assertEquals(known.rootDigest(), v.rootDigest());
        Files.writeString(model.resolve("config.json"), "{\"a\": 2}");
        assertTrue(refused(model, List.of()).contains("config.json"));
    }

    @Test
    void aKeyIsReadFromAPkcs12Keystore() throws Exception {
        Path p12 = tmp.resolve("keys.p12");
        Process keytool = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "keytool").toString(),
                "-genkeypair", "-keyalg", "EC", "-groupname", "secp256r1", "-alias", "hexforge", "-dname", "CN=hexforge",
                "-storetype", "PKCS12", "-keystore", p12.toString(), "-storepass", "changeit", "-validity", "1")
                .redirectErrorStream(true).start();
        String out = new String(keytool.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, keytool.waitFor(), out);
        java.security.PrivateKey k = Keys.readKeystore(p12, "changeit".toCharArray(), null);
        assertEquals(k, Keys.readKeystore(p12, "changeit".toCharArray(), "hexforge"));
        ModelSignature.sign(model, k, model.resolve("model.sig"), List.of());
        ModelSignature.verify(model, Keys.publicOf(k), model.resolve("model.sig"), List.of());
        SigningException wrong = assertThrows(SigningException.class, () -> Keys.readKeystore(p12, "nope".toCharArray(), null));
        assertTrue(wrong.getMessage().contains("keys.p12"), wrong.getMessage());
        SigningException alias = assertThrows(SigningException.class, () -> Keys.readKeystore(p12, "changeit".toCharArray(), "other"));
        assertTrue(alias.getMessage().contains("'other'"), alias.getMessage());
    }
}
