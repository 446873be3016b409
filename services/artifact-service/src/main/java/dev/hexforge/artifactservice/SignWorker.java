package dev.hexforge.artifactservice;

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

    /** The provenance of {@code folder} for this attempt's job, its materials looked up in the store and the catalogue. */
    private Provenance.Facts facts(Attempt a, Path folder, boolean built) {
        StageEvents.StageRequest req = a.request();
        SignPass.Sources sources = new SignPass.Sources() {
            @Override
            public String baseModelDigest() {
                return Provenance.digestOf(a.baseModel());
            }

            @Override
            public String uploadDigest(String uploadId) {
                return a.whileAway(() -> store().sha256(ArtifactStore.uploadKey(uploadId)));
            }

            @Override
            public String fileDigest(String field, JobSpec.Input input) {
                return Provenance.digestOf(a.input(field, input));
            }

            @Override
            public String baseArtifactDigest() {
                return req.inputs().stream().filter(i -> i.kind().equals(StageEvents.BASE_MODEL)).findFirst()
                        .map(StageEvents.ArtifactRef::sha256).orElse(null);
            }

            @Override
            public List<SignPass.Earlier> earlier() {
                return a.whileAway(() -> artifacts.findByJobIdOrderByCreatedAtAsc(UUID.fromString(req.jobId()))).stream()
                        .map(e -> new SignPass.Earlier(e.stage, e.kind, e.rootDigest, e.createdAt)).toList();
            }
        };
        return SignPass.facts(req.spec(), req.jobId(), req.tenant(), req.requestedAt(), sources, folder, built);
    }
}
