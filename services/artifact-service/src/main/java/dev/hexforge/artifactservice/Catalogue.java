package dev.hexforge.artifactservice;

import dev.hexforge.contracts.StageEvents;
import dev.hexforge.signing.FolderHasher;
import dev.hexforge.signing.Manifest;
import dev.hexforge.signing.ModelSignature;
import dev.hexforge.signing.Provenance;
import dev.hexforge.store.ArtifactStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;

import java.time.Duration;
import java.time.Instant;
import java.util.Comparator;
import java.util.List;
import java.util.UUID;

/**
 * Registers stage outputs and signs them. Registration is idempotent (the row id is derived from the attempt and
 * the content), and the signature is written to storage before the row, so a catalogued artifact is always signed.
 */
@Service
class Catalogue {
    private static final Logger LOG = LoggerFactory.getLogger(Catalogue.class);
    private final ArtifactRepository repo;
    private final ArtifactStore store;
    private final SigningKeys keys;

    Catalogue(ArtifactRepository repo, ArtifactStore store, SigningKeys keys) {
        this.repo = repo;
        this.store = store;
        this.keys = keys;
    }

    /** The signature's object: one per content and key, shared by every row naming that content. */
    static String signatureKey(String sha256, String hint) {
        return "signatures/" + sha256 + "/" + hint + "/" + ModelSignature.DEFAULT_SIGNATURE;
    }

    /** The files a download consists of: the stored files except a stale signature of their own, in name order. */
    static List<ArtifactStore.Entry> signedFiles(List<ArtifactStore.Entry> stored) {
        List<String> ignored = FolderHasher.ignoreList(ModelSignature.DEFAULT_SIGNATURE, List.of());
        return stored.stream().filter(e -> ignored.stream().noneMatch(i -> e.path().equals(i) || e.path().startsWith(i + "/")))
                .sorted(Comparator.comparing(ArtifactStore.Entry::path)).toList();
    }

    /** What signing a stored folder gave: its OMS root digest, the key, whether it has provenance, its files. */
    record Signed(String rootDigest, String keyHint, boolean provenance, int fileCount, long size, String signatureKey) {
    }

    /**
     * Signs a stored folder with the current key, once per content and key (the signature object is kept beside
     * the content); no catalogue row yet: that waits for the gateway to accept the attempt.
     */
    public Signed sign(StageEvents.ArtifactRef ref) {
        List<ArtifactStore.Entry> files = signedFiles(store.manifest(ref.sha256()));
        Manifest manifest = new Manifest(files.stream().map(e -> new Manifest.Entry(e.path(), e.sha256())).toList());
        String hint = keys.currentHint();
        String sigKey = signatureKey(ref.sha256(), hint);
        if (!signed(sigKey)) {
            store.putBytes(sigKey, ModelSignature.signManifest(ref.kind() + "-" + ref.sha256().substring(0, 12), manifest,
                    keys.signing()), "application/json");
        }
        return new Signed(manifest.rootDigest(), hint, files.stream().anyMatch(e -> e.path().equals(Provenance.FILE)),
                files.size(), files.stream().mapToLong(ArtifactStore.Entry::size).sum(), sigKey);
    }

    /** A catalogued row's signing facts. */
    Signed signed(ArtifactEntity a) {
        return new Signed(a.rootDigest, a.keyHint, a.provenance, a.fileCount, a.size, a.signatureKey);
    }

    private boolean signed(String sigKey) {
        return store.exists(sigKey);
    }

    /**
     * Waits (up to {@code timeout}) until the gateway's acceptance of these artifacts has been catalogued: a stage
     * is dispatched in the transaction that accepts the one before, so its request can arrive first.
     */
    public boolean awaitCatalogued(List<StageEvents.ArtifactRef> refs, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            if (refs.stream().allMatch(r -> repo.existsById(UUID.fromString(r.id())))) {
                return true;
            }
            if (System.nanoTime() > deadline) {
                return false;
            }
            try {
                Thread.sleep(100);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return false;
            }
        }
    }

    @Transactional
    public ArtifactEntity register(String tenant, String jobId, String attemptId, String stage, StageEvents.ArtifactRef ref) {
        UUID id = UUID.fromString(StageEvents.artifactId(attemptId, ref.sha256()));
        ArtifactEntity existing = repo.findById(id).orElse(null);
        if (existing != null) {
            return existing;
        }
        Signed signed = sign(ref);
        ArtifactEntity a = new ArtifactEntity();
        a.id = id;
        a.tenant = tenant;
        a.jobId = UUID.fromString(jobId);
        a.attemptId = UUID.fromString(attemptId);
        a.stage = stage;
        a.kind = ref.kind();
        a.sha256 = ref.sha256();
        a.size = signed.size();
        a.fileCount = signed.fileCount();
        a.rootDigest = signed.rootDigest();
        a.signatureKey = signed.signatureKey();
        a.keyHint = signed.keyHint();
        a.provenance = signed.provenance();
        a.createdAt = Instant.now();
        repo.save(a);
        LOG.info("artifact {} ({} of job {}, {} files, {} bytes) catalogued and signed", a.id, a.kind, jobId, a.fileCount, a.size);
        return a;
    }

    public void register(StageEvents.Completed c) {
        if (c.tenant() == null) {
            LOG.warn("completed event of attempt {} names no tenant (an older gateway); its outputs are not catalogued", c.attemptId());
            return;
        }
        for (StageEvents.ArtifactRef ref : c.outputs()) {
            register(c.tenant(), c.jobId(), c.attemptId(), c.stage().id(), ref);
        }
    }
}
