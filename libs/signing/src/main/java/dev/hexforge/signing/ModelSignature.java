package dev.hexforge.signing;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.PrivateKey;
import java.security.PublicKey;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * OpenSSF Model Signing (v1.0, "files" serialization, sha256) with a key: the manifest goes into an in-toto
 * statement, the statement is signed over its DSSE pre-authentication encoding, and the envelope is stored as a
 * sigstore bundle (v0.3) in {@code model.sig}. Verification applies the reference verifier's rules.
 */
public final class ModelSignature {
    public static final String DEFAULT_SIGNATURE = "model.sig";
    public static final String STATEMENT_TYPE = "https://in-toto.io/Statement/v1";
    public static final String PREDICATE_TYPE = "https://model_signing/signature/v1.0";
    public static final String PAYLOAD_TYPE = Dsse.PAYLOAD_TYPE;
    public static final String BUNDLE_TYPE = Dsse.BUNDLE_TYPE;
    private static final ObjectMapper JSON = new ObjectMapper();

    /** What a successful verification established. */
    public record Verified(String subject, String rootDigest, List<Manifest.Entry> files) {
    }

    private ModelSignature() {
    }

    /** Signs {@code dir}, writing the bundle to {@code signature} (inside or outside the folder). */
    public static void sign(Path dir, PrivateKey key, Path signature, List<String> ignore) {
        String sigName = insideName(dir, signature);
        List<String> ignores = FolderHasher.ignoreList(sigName, ignore);
        Manifest m = FolderHasher.hash(dir, ignores);
        byte[] payload = statement(dir.toAbsolutePath().normalize().getFileName().toString(), m, ignores);
        Dsse.write(signature, payload, key, "the model");
    }

    /**
     * The bundle {@link #sign} would write for a folder with these files, from digests already known (a
     * content-addressed store, whose object names are the digests): nothing is read or re-hashed. The ignore list is
     * the default one with {@code model.sig} inside the folder.
     */
    public static byte[] signManifest(String subject, Manifest files, PrivateKey key) {
        List<String> ignores = FolderHasher.ignoreList(DEFAULT_SIGNATURE, List.of());
        return Dsse.bundle(statement(subject, files, ignores), key, "the model");
    }

    static byte[] statement(String subject, Manifest m, List<String> ignores) {
        ObjectNode st = JSON.createObjectNode();
        st.put("_type", STATEMENT_TYPE);
        ObjectNode subj = st.putArray("subject").addObject();
        subj.put("name", subject);
        subj.putObject("digest").put("sha256", m.rootDigest());
        st.put("predicateType", PREDICATE_TYPE);
        ObjectNode pred = st.putObject("predicate");
        ArrayNode res = pred.putArray("resources");
        for (Manifest.Entry e : m.files()) {
            res.addObject().put("algorithm", "sha256").put("name", e.name()).put("digest", e.sha256());
        }
        ObjectNode ser = pred.putObject("serialization");
        ser.put("allow_symlinks", false);
        ser.put("method", "files");
        ser.put("hash_type", "sha256");
        ArrayNode ig = ser.putArray("ignore_paths");
        ignores.forEach(ig::add);
        return st.toPrettyString().getBytes(StandardCharsets.UTF_8);
    }

    /** DSSE pre-authentication encoding: "DSSEv1 len(type) type len(payload) payload", lengths in bytes. */
    public static byte[] pae(String type, byte[] payload) {
        return Dsse.pae(type, payload);
    }

    public static Verified verify(Path dir, PublicKey key, Path signature, List<String> ignore) {
        return verify(dir, key, signature, ignore, Map.of());
    }

    /** As {@link #verify(Path, PublicKey, Path, List)}, with the digests of some files already known (see FolderHasher). */
    public static Verified verify(Path dir, PublicKey key, Path signature, List<String> ignore, Map<String, String> knownDigests) {
        JsonNode st = Dsse.open(signature, key, "signature", "no signature at " + signature + " (the folder is not signed)");
        if (!STATEMENT_TYPE.equals(st.path("_type").asText())) {
            throw new VerificationException("statement _type is " + st.path("_type") + ", expected " + STATEMENT_TYPE);
        }
        if (!PREDICATE_TYPE.equals(st.path("predicateType").asText())) {
            throw new VerificationException("predicateType is " + st.path("predicateType") + ", expected " + PREDICATE_TYPE);
        }
        JsonNode subjects = st.path("subject");
        if (!subjects.isArray() || subjects.size() != 1) {
            throw new VerificationException("the statement must have exactly one subject");
        }
        String claimedRoot = subjects.get(0).path("digest").path("sha256").asText();
        JsonNode ser = st.path("predicate").path("serialization");
        if (!"files".equals(ser.path("method").asText()) || !"sha256".equals(ser.path("hash_type").asText())) {
            throw new VerificationException("unsupported serialization " + ser.path("method") + "/" + ser.path("hash_type")
                    + " (only files/sha256)");
        }
        Map<String, String> claimed = new TreeMap<>();
        List<Manifest.Entry> claimedList = new ArrayList<>();
        for (JsonNode r : st.path("predicate").path("resources")) {
            if (!"sha256".equals(r.path("algorithm").asText())) {
                throw new VerificationException("resource " + r.path("name") + " uses algorithm " + r.path("algorithm"));
            }
            claimed.put(r.path("name").asText(), r.path("digest").asText());
            claimedList.add(new Manifest.Entry(r.path("name").asText(), r.path("digest").asText()));
        }
        String statedRoot = new Manifest(claimed.entrySet().stream()
                .map(e -> new Manifest.Entry(e.getKey(), e.getValue())).toList()).rootDigest();
        if (!statedRoot.equals(claimedRoot)) {
            throw new VerificationException("the subject's root digest " + claimedRoot
                    + " does not match the digests the statement lists (" + statedRoot + ")");
        }
        Manifest actual = FolderHasher.hash(dir, FolderHasher.ignoreList(insideName(dir, signature), ignore), knownDigests);
        Set<String> seen = new HashSet<>();
        for (Manifest.Entry e : actual.files()) {
            seen.add(e.name());
            String want = claimed.get(e.name());
            if (want == null) {
                throw new VerificationException("file '" + e.name() + "' is not in the signed manifest (added after signing?)");
            }
            if (!want.equals(e.sha256())) {
                throw new VerificationException("file '" + e.name() + "' was modified: sha256 " + e.sha256() + ", signed " + want);
            }
        }
        for (String name : claimed.keySet()) {
            if (!seen.contains(name)) {
                throw new VerificationException("file '" + name + "' is signed but missing from the folder (removed or renamed?)");
            }
        }
        return new Verified(subjects.get(0).path("name").asText(), claimedRoot, actual.files());
    }

    /** The signature's path relative to the folder when it lies inside it (so it is ignored), else null. */
    private static String insideName(Path dir, Path signature) {
        Path d = dir.toAbsolutePath().normalize();
        Path s = signature.toAbsolutePath().normalize();
        return s.startsWith(d) ? d.relativize(s).toString().replace('\\', '/') : null;
    }
}
