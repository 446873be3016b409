package dev.hexforge.artifactservice;

import com.fasterxml.jackson.databind.JsonNode;
import dev.hexforge.contracts.ContractsJson;
import dev.hexforge.contracts.JobSpec;
import dev.hexforge.contracts.Stage;
import dev.hexforge.contracts.StageEvents;
import dev.hexforge.io.Folders;
import dev.hexforge.pass.SignPass;
import dev.hexforge.signing.Provenance;
import dev.hexforge.stage.Attempt;
import dev.hexforge.stage.StageServiceProperties;
import dev.hexforge.stage.StageWorker;
import dev.hexforge.store.ArtifactStore;
import dev.hexforge.web.UnavailableFilter;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.stereotype.Component;

import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
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
    private static final Logger LOG = LoggerFactory.getLogger(SignWorker.class);
    private final Catalogue catalogue;
    private final ArtifactRepository artifacts;
    private final SigningKeys keys;

    SignWorker(KafkaTemplate<String, String> kafka, ArtifactStore store, StageServiceProperties settings,
               Catalogue catalogue, ArtifactRepository artifacts, SigningKeys keys) {
        super(Stage.SIGN, kafka, store, settings.workDir(), Duration.ofSeconds(5));
        this.catalogue = catalogue;
        this.artifacts = artifacts;
        this.keys = keys;
    }

    @Override
    protected StageEvents.Completed run(Attempt a) {
        StageEvents.StageRequest req = a.request();
        List<StageEvents.ArtifactRef> folders = req.inputs().stream().filter(i -> !StageEvents.isJobInput(i.kind())).toList();
        List<StageEvents.ArtifactRef> outputs = new ArrayList<>();
        if (folders.isEmpty()) { // a sign-only job: the model as the tenant gave it
            Path signed = SignPass.run(a.model(), a.dir().resolve("signed"), keys.signing(),
                    a.spec().sign().provenance() ? facts(a, a.model(), false) : null);
            outputs.add(a.storeOutput(signed, "hf-model"));
        }
        if (a.spec().sign().provenance() && !a.whileAway(() -> catalogue.awaitCatalogued(folders, Duration.ofSeconds(30)))) {
            // the provenance names the job's earlier artifacts from the catalogue, which takes them as the gateway accepts them
            LOG.warn("sign attempt {}: the outputs of the stage before are not catalogued yet; the provenance names what is", req.attemptId());
        }
        for (int n = 0; n < folders.size(); n++) { // every output of the stage before (quantize.format both makes two)
            StageEvents.ArtifactRef in = folders.get(n);
            if (!a.spec().sign().provenance()) {
                outputs.add(new StageEvents.ArtifactRef(StageEvents.artifactId(req.attemptId(), in.sha256()), in.kind(), in.sha256(),
                        in.size(), in.key()));
                continue;
            }
            Path folder = n == 0 ? a.model() : a.dir().resolve("in").resolve("model-" + n);
            if (n > 0) {
                a.whileAway(() -> {
                    Folders.deleteQuietly(folder); // a try cut short leaves files behind
                    return store().getFolder(in.sha256(), folder);
                });
            }
            Path signed = SignPass.run(folder, a.dir().resolve("signed-" + n), keys.signing(), facts(a, folder, true));
            outputs.add(a.storeOutput(signed, in.kind()));
        }
        List<Map<String, Object>> rows = new ArrayList<>();
        // a job's signed outputs are catalogued before its completion is reported, so they can be downloaded the moment
        // the job completes; an attempt the gateway fenced off meanwhile (superseded) is signed but not catalogued
        boolean fenced = a.whileAway(() -> store().keysUnder(ArtifactStore.attemptPrefix(req.attemptId())))
                .contains(ArtifactStore.cancelledKey(req.attemptId()));
        for (StageEvents.ArtifactRef out : outputs) {
            Catalogue.Signed signed = a.whileAway(() -> fenced ? catalogue.sign(out)
                    : catalogue.signed(catalogue.register(req.tenant(), req.jobId(), req.attemptId(), Stage.SIGN.id(), out)));
            Map<String, Object> r = new LinkedHashMap<>();
            r.put("rootDigest", signed.rootDigest());
            r.put("keyHint", signed.keyHint());
            r.put("provenance", signed.provenance());
            r.put("files", signed.fileCount());
            rows.add(r);
        }
        Map<String, Object> report = new LinkedHashMap<>(rows.get(0)); // the first output's, as before; every one's below
        if (rows.size() > 1) {
            report.put("artifacts", rows);
        }
        return a.completed(outputs, report);
    }

    /** The object store, and this service's database too: a sign attempt waits for either while it is away. */
    @Override
    protected boolean away(Throwable e) {
        return UnavailableFilter.dependencyAway(e).isPresent();
    }

    /**
     * What the provenance states: the spec; the base model (a folder's OMS root digest, an upload's sha256), the
     * training and calibration data the job read, and every earlier artifact of the job by its OMS root digest; the
     * versions of the tools that made the folder (from its export.json and compile manifest); the times.
     */
    private Provenance.Facts facts(Attempt a, Path folder, boolean built) {
        StageEvents.StageRequest req = a.request();
        List<ArtifactEntity> earlier = a.whileAway(() -> artifacts.findByJobIdOrderByCreatedAtAsc(UUID.fromString(req.jobId())));
        JobSpec spec = req.spec();
        Map<String, String> materials = new LinkedHashMap<>();
        JobSpec.Input model = spec.model();
        if (model.path() != null) {
            materials.put("base-model:" + model.path(), Provenance.digestOf(a.baseModel()));
        } else if (model.upload() != null) {
            materials.put("base-model:upload/" + model.upload(), a.whileAway(() -> store().sha256(ArtifactStore.uploadKey(model.upload()))));
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
        Map<String, String> versions = SignPass.versions(folder);
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
            materials.put(name + ":upload/" + input.upload(), a.whileAway(() -> store().sha256(ArtifactStore.uploadKey(input.upload()))));
        } else {
            materials.put(name + ":" + input.path(), Provenance.digestOf(a.input(field, input)));
        }
    }
}
