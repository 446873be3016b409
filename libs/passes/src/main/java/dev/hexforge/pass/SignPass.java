package dev.hexforge.pass;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.hexforge.compile.OrtQnnBundler;
import dev.hexforge.contracts.ContractsJson;
import dev.hexforge.contracts.JobSpec;
import dev.hexforge.contracts.Stage;
import dev.hexforge.io.Folders;
import dev.hexforge.onnx.export.ExportInfo;
import dev.hexforge.signing.Provenance;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.PrivateKey;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The sign stage's work on a folder: a copy of the model with a signed provenance statement
 * ({@link Provenance}): what the job read and made before, by digest ({@link #facts}), and the versions of the tools
 * that made it. The model signature over the result (OpenSSF
 * model signing) is the caller's last step: {@code hexforge sign} writes it beside the files, the artifact service
 * keeps it beside the stored folder.
 */
public final class SignPass {
    private SignPass() {
    }

    /** Copies {@code model} to {@code out} and, with {@code facts}, signs a provenance statement into it. */
    public static Path run(Path model, Path out, PrivateKey key, Provenance.Facts facts) {
        Folders.copyTree(model, out);
        if (facts != null) {
            Provenance.sign(out, key, facts);
        }
        return out;
    }

    /** A job's artifact made before the one signed: its stage, kind, OMS root digest and time. */
    public record Earlier(String stage, String kind, String rootDigest, Instant createdAt) {
    }

    /** Where a provenance statement's materials are looked up: the fleet's store and catalogue for a job. */
    public interface Sources {
        /** The OMS root digest of the base model named by a server path. */
        String baseModelDigest();

        /** The stored sha256 of an upload. */
        String uploadDigest(String uploadId);

        /** The digest of a data file a spec field names by server path. */
        String fileDigest(String field, JobSpec.Input input);

        /** The digest of the base model named as an earlier artifact of the tenant, or null. */
        String baseArtifactDigest();

        /** The job's artifacts made before, oldest first. */
        List<Earlier> earlier();
    }

    /**
     * What a job's provenance states: the spec; the base model (a folder's OMS root digest, an upload's sha256, an
     * artifact's digest), the training and calibration data the job read, and every earlier artifact of the job by its
     * OMS root digest; the versions of the tools that made {@code folder}; the times. A folder the job did not build
     * ({@code built} false: a sign-only job) says it was supplied by the tenant.
     */
    public static Provenance.Facts facts(JobSpec spec, String jobId, String tenant, Instant requestedAt, Sources sources,
                                         Path folder, boolean built) {
        Map<String, String> materials = new LinkedHashMap<>();
        JobSpec.Input model = spec.model();
        if (model.path() != null) {
            materials.put("base-model:" + model.path(), sources.baseModelDigest());
        } else if (model.upload() != null) {
            materials.put("base-model:upload/" + model.upload(), sources.uploadDigest(model.upload()));
        } else {
            String digest = sources.baseArtifactDigest();
            if (digest != null) {
                materials.put("base-model:artifact/" + model.artifact(), digest);
            }
        }
        List<Stage> stages = spec.stageList();
        if (stages.contains(Stage.FINETUNE)) {
            file(sources, materials, "finetune-data", "finetune.data", spec.finetune().data());
            file(sources, materials, "finetune-eval-data", "finetune.evalData", spec.finetune().evalData());
        }
        if (stages.contains(Stage.QUANTIZE)) {
            file(sources, materials, "calibration-data", "quantize.calibration", spec.quantize().calibration());
        }
        List<Earlier> earlier = sources.earlier();
        for (Earlier e : earlier) {
            materials.put(e.stage() + "/" + e.kind(), e.rootDigest());
        }
        JsonNode specJson = ContractsJson.MAPPER.valueToTree(spec);
        Instant started = earlier.isEmpty() ? requestedAt : earlier.get(0).createdAt();
        String origin = built ? null : (model.path() != null ? "supplied" : "uploaded") + " by tenant " + tenant + " ("
                + model.describe() + "), not built by the fleet";
        return new Provenance.Facts(specJson, materials, versions(folder), jobId, started, Instant.now(), origin);
    }

    /** A data file the job read: by the upload's stored digest, or the file's under the input roots. */
    private static void file(Sources sources, Map<String, String> materials, String name, String field, JobSpec.Input input) {
        if (input == null) {
            return;
        }
        if (input.upload() != null) {
            materials.put(name + ":upload/" + input.upload(), sources.uploadDigest(input.upload()));
        } else {
            materials.put(name + ":" + input.path(), sources.fileDigest(field, input));
        }
    }

    /**
     * The versions a provenance statement names: Hexforge's and Java's, and those the folder records itself (the
     * exporter and opset of its {@code export.json}, the tools of a compiled bundle's manifest).
     */
    public static Map<String, String> versions(Path folder) {
        Map<String, String> out = new LinkedHashMap<>();
        String v = SignPass.class.getPackage().getImplementationVersion();
        out.put("hexforge", v == null ? "development" : v);
        out.put("java", System.getProperty("java.version"));
        ObjectMapper json = new ObjectMapper();
        try {
            Path export = folder.resolve(ExportInfo.FILE);
            if (Files.isRegularFile(export)) {
                JsonNode e = json.readTree(export.toFile());
                out.put("exporter", e.path("hexforgeVersion").asText());
                out.put("onnxOpset", e.path("opset").asText());
            }
            Path manifest = folder.resolve(OrtQnnBundler.MANIFEST);
            if (Files.isRegularFile(manifest)) {
                JsonNode m = json.readTree(manifest.toFile());
                m.path("tools").fields().forEachRemaining(t -> out.put(t.getKey(), t.getValue().asText()));
                if (m.has("qnnSdk")) {
                    out.put("qnnSdk", m.path("qnnSdk").asText());
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException("reading the versions in " + folder + ": " + e.getMessage(), e);
        }
        return out;
    }
}
