package dev.hexforge.signing;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.PrivateKey;
import java.security.PublicKey;
import java.time.Instant;
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

    /**
     * What went into the model. {@code origin}, when set, says who made the signed content if the fleet did not build
     * it (a sign-only job over a tenant's upload): a signature over it vouches for the bytes, not for how they were made.
     */
    public record Facts(JsonNode jobSpec, Map<String, String> materials, Map<String, String> versions, String invocationId,
                        Instant startedOn, Instant finishedOn, String origin) {
        public Facts(JsonNode jobSpec, Map<String, String> materials, Map<String, String> versions, String invocationId,
                     Instant startedOn, Instant finishedOn) {
            this(jobSpec, materials, versions, invocationId, startedOn, finishedOn, null);
        }
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
        build.putObject("internalParameters").put("origin", facts.origin() == null ? "built by the fleet" : facts.origin());
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
        Dsse.write(dir.resolve(FILE), st.toPrettyString().getBytes(StandardCharsets.UTF_8), key, "the provenance");
    }

    /** Checks the provenance's signature and that its subject is this folder as it is now; returns the statement. */
    public static JsonNode verify(Path dir, PublicKey key) {
        return verify(dir, key, Map.of());
    }

    /** As {@link #verify(Path, PublicKey)}, with the digests of some files already known (see FolderHasher). */
    public static JsonNode verify(Path dir, PublicKey key, Map<String, String> knownDigests) {
        Path file = dir.resolve(FILE);
        JsonNode st = Dsse.open(file, key, "provenance signature", "no provenance at " + file);
        if (!PREDICATE_TYPE.equals(st.path("predicateType").asText())) {
            throw new VerificationException("provenance predicateType is " + st.path("predicateType") + ", expected " + PREDICATE_TYPE);
        }
        String root = FolderHasher.hash(dir, ignores(), knownDigests).rootDigest();
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
