package dev.hexforge.artifactservice;

import com.fasterxml.jackson.databind.JsonNode;
import dev.hexforge.contracts.ContractsJson;
import dev.hexforge.contracts.JobSpec;
import dev.hexforge.contracts.Stage;
import dev.hexforge.contracts.StageEvents;
import dev.hexforge.signing.Provenance;
import dev.hexforge.signing.SigningException;
import dev.hexforge.stage.Attempt;
import dev.hexforge.stage.StageServiceConfig;
import dev.hexforge.stage.StageWorker;
import dev.hexforge.store.ArtifactStore;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.support.Acknowledgment;
import org.springframework.stereotype.Component;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * The sign stage: adds a signed provenance record (job spec, digests of every artifact the job made before, tool
 * versions, times) to the previous stage's output, stores the result and catalogues it, which signs it whole. With
 * {@code sign.provenance: false} the output is the input itself, catalogued (and so signed) for this stage.
 */
@Component
class SignWorker extends StageWorker {
    private final Catalogue catalogue;
    private final ArtifactRepository artifacts;
    private final SigningKeys keys;

    SignWorker(KafkaTemplate<String, String> kafka, ArtifactStore store, @Value("${hexforge.work-dir}") Path work,
               Catalogue catalogue, ArtifactRepository artifacts, SigningKeys keys) {
        super(Stage.SIGN, kafka, store, work, Duration.ofSeconds(5));
        this.catalogue = catalogue;
        this.artifacts = artifacts;
        this.keys = keys;
    }

    @KafkaListener(id = "sign-requests", topics = "hexforge.stage.sign.requests.v1", groupId = "hexforge-artifact-service-sign",
            containerFactory = StageServiceConfig.STAGE_REQUESTS)
    void onRequest(String payload, Acknowledgment ack) {
        submit(payload, ack);
    }

    @Override
    protected StageEvents.Completed run(Attempt a) throws IOException {
        StageEvents.StageRequest req = a.request();
        StageEvents.ArtifactRef out;
        boolean storedFolder = !req.inputs().isEmpty() && !StageEvents.isJobInput(req.inputs().get(0).kind());
        if (!a.spec().sign().provenance() && storedFolder) {
            StageEvents.ArtifactRef in = req.inputs().get(0);
            out = new StageEvents.ArtifactRef(StageEvents.artifactId(req.attemptId(), in.sha256()), in.kind(), in.sha256(),
                    in.size(), in.key());
        } else {
            Path folder = a.dir().resolve("signed");
            dev.hexforge.io.Folders.copyTree(a.model(), folder);
            if (a.spec().sign().provenance()) {
                Provenance.sign(folder, keys.signing(), facts(a, folder, storedFolder));
            }
            out = a.storeOutput(folder, storedFolder ? req.inputs().get(0).kind() : "hf-model");
        }
        ArtifactEntity row = catalogue.register(req.tenant(), req.jobId(), req.attemptId(), Stage.SIGN.id(), out);
        Map<String, Object> report = new LinkedHashMap<>();
        report.put("rootDigest", row.rootDigest);
        report.put("keyHint", row.keyHint);
        report.put("provenance", row.provenance);
        report.put("files", row.fileCount);
        return a.completed(List.of(out), report);
    }

    /**
     * What the provenance states: the spec; the base model (a folder's OMS root digest, an upload's sha256), the
     * training and calibration data the job read, and every earlier artifact of the job by its OMS root digest; the
     * versions of the tools that made the folder (from its export.json and compile manifest); the times.
     */
    private Provenance.Facts facts(Attempt a, Path folder, boolean built) {
        StageEvents.StageRequest req = a.request();
        List<ArtifactEntity> earlier = artifacts.findByJobIdOrderByCreatedAtAsc(UUID.fromString(req.jobId()));
        JobSpec spec = req.spec();
        Map<String, String> materials = new LinkedHashMap<>();
        JobSpec.Input model = spec.model();
        if (model.path() != null) {
            materials.put("base-model:" + model.path(), Provenance.digestOf(a.baseModel()));
        } else if (model.upload() != null) {
            materials.put("base-model:upload/" + model.upload(), store().sha256(ArtifactStore.uploadKey(model.upload())));
        } else {
            req.inputs().stream().filter(i -> i.kind().equals(StageEvents.BASE_MODEL)).findFirst()
                    .ifPresent(i -> materials.put("base-model:artifact/" + model.artifact(), i.sha256()));
        }
        List<Stage> stages = spec.stageList();
        if (stages.contains(Stage.FINETUNE)) {
            file(a, materials, "finetune-data", "finetune.data", spec.finetune().data());
            file(a, materials, "finetune-eval-data", "finetune.evalData", spec.finetune().evalData());
        }
        if (stages.contains(Stage.QUANTIZE)) {
            file(a, materials, "calibration-data", "quantize.calibration", spec.quantize().calibration());
        }
        for (ArtifactEntity e : earlier) {
            materials.put(e.stage + "/" + e.kind, e.rootDigest);
        }
        Map<String, String> versions = new LinkedHashMap<>();
        String v = SignWorker.class.getPackage().getImplementationVersion();
        versions.put("hexforge", v == null ? "development" : v);
        versions.put("java", System.getProperty("java.version"));
        versions.putAll(toolVersions(folder));
        JsonNode specJson = ContractsJson.MAPPER.valueToTree(spec);
        Instant started = earlier.isEmpty() ? req.requestedAt() : earlier.get(0).createdAt;
        String origin = built ? null : (model.path() != null ? "supplied" : "uploaded") + " by tenant " + req.tenant() + " ("
                + model.describe() + "), not built by the fleet";
        return new Provenance.Facts(specJson, materials, versions, req.jobId(), started, Instant.now(), origin);
    }

    /** A data file the job read: by the upload's stored digest, or the file's under the input roots. */
    private void file(Attempt a, Map<String, String> materials, String name, String field, JobSpec.Input input) {
        if (input == null) {
            return;
        }
        if (input.upload() != null) {
            materials.put(name + ":upload/" + input.upload(), store().sha256(ArtifactStore.uploadKey(input.upload())));
        } else {
            materials.put(name + ":" + input.path(), Provenance.digestOf(a.input(field, input)));
        }
    }

    /** Versions the folder records: the exporter's (export.json) and the compile target's tools (manifest.json). */
    private static Map<String, String> toolVersions(Path folder) {
        Map<String, String> out = new LinkedHashMap<>();
        try {
            Path export = folder.resolve("export.json");
            if (Files.isRegularFile(export)) {
                JsonNode e = ContractsJson.MAPPER.readTree(export.toFile());
                out.put("exporter", e.path("hexforgeVersion").asText());
                out.put("onnxOpset", e.path("opset").asText());
            }
            Path manifest = folder.resolve("manifest.json");
            if (Files.isRegularFile(manifest)) {
                JsonNode m = ContractsJson.MAPPER.readTree(manifest.toFile());
                m.path("tools").properties().forEach(t -> out.put(t.getKey(), t.getValue().asText()));
                if (m.has("qnnSdk")) {
                    out.put("qnnSdk", m.path("qnnSdk").asText());
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException("reading the versions in " + folder + ": " + e.getMessage(), e);
        }
        return out;
    }

    @Override
    protected StageEvents.StageError triage(Exception e) {
        if (e instanceof SigningException) {
            return new StageEvents.StageError("SIGNING_FAILED", message(e), "check the artifact service's signing key configuration");
        }
        return super.triage(e);
    }
}
