package dev.hexforge.signing;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.PrivateKey;
import java.security.PublicKey;
import java.security.Signature;
import java.time.Instant;
import java.util.Base64;
import java.util.List;
import java.util.Map;

/**
 * How a model was made, as a signed in-toto statement in the SLSA provenance v1 shape: the folder's root digest as
 * subject; the job spec as external parameters; base model, adapter and data digests as resolved dependencies; tool
 * and library versions and timestamps as run details. Stored as a sigstore bundle in {@code provenance.sig} inside
 * the folder; written before {@code model.sig}, so the model signature covers it too.
 */
public final class Provenance {
    public static final String FILE = "provenance.sig";
    public static final String PREDICATE_TYPE = "https://slsa.dev/provenance/v1";
    public static final String BUILD_TYPE = "https://hexforge.dev/job/v1";
    private static final ObjectMapper JSON = new ObjectMapper();

    /** What went into the model. */
    public record Facts(JsonNode jobSpec, Map<String, String> materials, Map<String, String> versions, String invocationId,
                        Instant startedOn, Instant finishedOn) {
    }

    private Provenance() {
    }

    static List<String> ignores() {
        return FolderHasher.ignoreList(ModelSignature.DEFAULT_SIGNATURE, List.of(FILE));
    }

    public static void sign(Path dir, PrivateKey key, Facts facts) {
        Manifest m = FolderHasher.hash(dir, ignores());
        ObjectNode st = JSON.createObjectNode();
        st.put("_type", ModelSignature.STATEMENT_TYPE);
        ObjectNode subject = st.putArray("subject").addObject();
        subject.put("name", dir.toAbsolutePath().normalize().getFileName().toString());
        subject.putObject("digest").put("sha256", m.rootDigest());
        st.put("predicateType", PREDICATE_TYPE);
        ObjectNode pred = st.putObject("predicate");
        ObjectNode build = pred.putObject("buildDefinition");
        build.put("buildType", BUILD_TYPE);
        build.set("externalParameters", facts.jobSpec() == null ? JSON.createObjectNode() : facts.jobSpec());
        ArrayNode deps = build.putArray("resolvedDependencies");
        facts.materials().forEach((name, sha) -> deps.addObject().put("name", name).putObject("digest").put("sha256", sha));
        ObjectNode run = pred.putObject("runDetails");
        ObjectNode builder = run.putObject("builder");
        builder.put("id", "https://hexforge.dev/builder/v1");
        ObjectNode versions = builder.putObject("version");
        facts.versions().forEach(versions::put);
        ObjectNode meta = run.putObject("metadata");
        meta.put("invocationId", facts.invocationId());
        meta.put("startedOn", facts.startedOn().toString());
        meta.put("finishedOn", facts.finishedOn().toString());
        byte[] payload = st.toPrettyString().getBytes(StandardCharsets.UTF_8);
        try {
            Signature s = Signature.getInstance(Keys.signatureAlgorithm(key));
            s.initSign(key);
            s.update(ModelSignature.pae(ModelSignature.PAYLOAD_TYPE, payload));
            ObjectNode bundle = JSON.createObjectNode();
            bundle.put("mediaType", ModelSignature.BUNDLE_TYPE);
            ObjectNode vm = bundle.putObject("verificationMaterial");
            vm.putObject("publicKey").put("hint", Keys.hint(Keys.publicOf(key)));
            vm.putArray("tlogEntries");
            ObjectNode env = bundle.putObject("dsseEnvelope");
            env.put("payload", Base64.getEncoder().encodeToString(payload));
            env.put("payloadType", ModelSignature.PAYLOAD_TYPE);
            env.putArray("signatures").addObject().put("sig", Base64.getEncoder().encodeToString(s.sign())).put("keyid", "");
            Files.writeString(dir.resolve(FILE), bundle.toPrettyString());
        } catch (GeneralSecurityException e) {
            throw new SigningException("signing provenance failed: " + e.getMessage(), e);
        } catch (IOException e) {
            throw new SigningException("writing " + dir.resolve(FILE) + ": " + e.getMessage(), e);
        }
    }

    /** Checks the provenance's signature and that its subject is this folder as it is now; returns the statement. */
    public static JsonNode verify(Path dir, PublicKey key) {
        Path file = dir.resolve(FILE);
        JsonNode bundle;
        try {
            bundle = JSON.readTree(Files.readString(file));
        } catch (IOException e) {
            throw new VerificationException(Files.exists(file) ? file + " is not valid JSON" : "no provenance at " + file, e);
        }
        JsonNode env = bundle.path("dsseEnvelope");
        byte[] payload;
        byte[] sig;
        try {
            payload = Base64.getDecoder().decode(env.path("payload").asText());
            sig = Base64.getDecoder().decode(env.path("signatures").path(0).path("sig").asText());
        } catch (IllegalArgumentException e) {
            throw new VerificationException("provenance payload or signature is not base64", e);
        }
        try {
            Signature s = Signature.getInstance(Keys.signatureAlgorithm(key));
            s.initVerify(key);
            s.update(ModelSignature.pae(ModelSignature.PAYLOAD_TYPE, payload));
            if (!s.verify(sig)) {
                throw new VerificationException("provenance signature does not match: wrong key, or the statement was altered");
            }
        } catch (GeneralSecurityException e) {
            throw new VerificationException("provenance signature does not match: " + e.getMessage(), e);
        }
        JsonNode st;
        try {
            st = JSON.readTree(payload);
        } catch (IOException e) {
            throw new VerificationException("the provenance payload is not JSON", e);
        }
        if (!PREDICATE_TYPE.equals(st.path("predicateType").asText())) {
            throw new VerificationException("provenance predicateType is " + st.path("predicateType") + ", expected " + PREDICATE_TYPE);
        }
        String root = FolderHasher.hash(dir, ignores()).rootDigest();
        String claimed = st.path("subject").path(0).path("digest").path("sha256").asText();
        if (!root.equals(claimed)) {
            throw new VerificationException("the provenance describes root digest " + claimed + " but the folder is " + root
                    + " (changed after the provenance was signed)");
        }
        return st;
    }

    /** Digest of a file, or a folder's OMS root digest, for a resolved dependency. */
    public static String digestOf(Path p) {
        return Files.isDirectory(p) ? FolderHasher.hash(p, FolderHasher.ignoreList(ModelSignature.DEFAULT_SIGNATURE, List.of(FILE))).rootDigest()
                : FolderHasher.sha256(p);
    }

}
