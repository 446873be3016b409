package dev.hexforge.exportservice;

import dev.hexforge.checkpoint.Checkpoint;
import dev.hexforge.contracts.ContractsJson;
import dev.hexforge.contracts.JobSpec;
import dev.hexforge.contracts.Stage;
import dev.hexforge.contracts.StageEvents;
import dev.hexforge.contracts.Topics;
import dev.hexforge.io.Folders;
import dev.hexforge.onnx.export.DecoderExporter;
import dev.hexforge.onnx.export.ExportInfo;
import dev.hexforge.onnx.export.ExportOptions;
import dev.hexforge.onnx.export.LinearFormat;
import dev.hexforge.quant.QuantizedCheckpoint;
import dev.hexforge.quant.QuantizedModel;
import dev.hexforge.quant.onnx.MatMulNBitsFormat;
import dev.hexforge.quant.onnx.QdqFormat;
import dev.hexforge.onnx.export.Variant;
import dev.hexforge.store.ArtifactStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.stereotype.Component;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * Runs one export attempt per request: reports progress, exports, stores the folder content-addressed, and reports
 * the result. A request for an attempt that already finished re-emits the stored result instead of running again.
 */
@Component
class ExportWorker {
    private static final Logger LOG = LoggerFactory.getLogger(ExportWorker.class);
    private final KafkaTemplate<String, String> kafka;
    private final ArtifactStore store;
    private final Path work;

    ExportWorker(KafkaTemplate<String, String> kafka, ArtifactStore store, @Value("${hexforge.work-dir}") Path work) {
        this.kafka = kafka;
        this.store = store;
        this.work = work;
    }

    static String resultKey(String attemptId) {
        return "attempts/" + attemptId + "/completed.json";
    }

    @KafkaListener(topics = "hexforge.stage.export.requests.v1", groupId = "hexforge-export-service")
    void onRequest(String payload) {
        StageEvents.StageRequest req;
        try {
            req = ContractsJson.read(payload, StageEvents.StageRequest.class);
        } catch (IllegalArgumentException e) {
            LOG.warn("unreadable export request dropped: {}", e.getMessage());
            return;
        }
        try {
            if (store.exists(resultKey(req.attemptId()))) {
                LOG.info("attempt {} already completed; re-emitting its result", req.attemptId());
                send(req.jobId(), new String(store.getBytes(resultKey(req.attemptId())), StandardCharsets.UTF_8));
                return;
            }
            send(req.jobId(), ContractsJson.write(progress(req, 0, "exporting")));
            StageEvents.Completed done = export(req);
            store.putJson(resultKey(req.attemptId()), ContractsJson.MAPPER.valueToTree(done));
            send(req.jobId(), ContractsJson.write(done));
        } catch (Exception e) {
            LOG.info("export attempt {} failed: {}", req.attemptId(), e.getMessage());
            send(req.jobId(), ContractsJson.write(new StageEvents.Failed(StageEvents.SCHEMA_VERSION, req.jobId(), req.attemptId(),
                    Stage.EXPORT, Instant.now(), ErrorTriage.of(e), Map.of())));
        }
    }

    private StageEvents.Completed export(StageEvents.StageRequest req) throws IOException {
        JobSpec spec = req.spec();
        JobSpec.Export e = spec.export();
        Variant v = e.variant().equals("static") ? Variant.STATIC : Variant.DYNAMIC;
        Path out = work.resolve(req.attemptId());
        Path in = work.resolve(req.attemptId() + "-in").resolve("model"); // a stable name: it is recorded in the export
        Folders.deleteTree(out);
        Folders.deleteTree(in.getParent());
        Files.createDirectories(work);
        long t0 = System.nanoTime();
        long[] lastReport = {0};
        Path model;
        if (!req.inputs().isEmpty()) {
            store.getFolder(req.inputs().get(0).sha256(), in);
            model = in;
        } else if (spec.model().path() != null) {
            model = Path.of(spec.model().path());
        } else {
            throw new IllegalArgumentException("model uploads are not supported by this export service yet; give model.path");
        }
        try (Checkpoint ckpt = Checkpoint.open(model)) {
            LinearFormat format = LinearFormat.FLOAT;
            String kind = "onnx-" + v.name().toLowerCase();
            if (QuantizedCheckpoint.isQuantized(model)) {
                QuantizedModel qm = QuantizedCheckpoint.read(ckpt);
                boolean nbits = spec.quantize().format().equals("matmulnbits");
                format = nbits ? new MatMulNBitsFormat(qm) : new QdqFormat(qm);
                kind += nbits ? "-matmulnbits" : "-qdq";
            }
            ExportInfo info = DecoderExporter.export(ckpt, out, new ExportOptions(v, e.seq(), e.ctx(), e.opset()), format, (what, done, total) -> {
                long now = System.nanoTime();
                if (now - lastReport[0] > TimeUnit.SECONDS.toNanos(5)) {
                    lastReport[0] = now;
                    send(req.jobId(), ContractsJson.write(progress(req, total == 0 ? 0 : 90.0 * done / total, what)));
                }
            });
            ArtifactStore.StoredFolder stored = store.putFolder(out);
            return new StageEvents.Completed(StageEvents.SCHEMA_VERSION, req.jobId(), req.attemptId(), Stage.EXPORT, Instant.now(),
                    List.of(new StageEvents.ArtifactRef(stored.sha256(), kind, stored.sha256(),
                            stored.size(), stored.key())),
                    Map.of("variant", v.name().toLowerCase(), "graphs", info.graphs(), "files", stored.files().size(),
                            "seconds", (System.nanoTime() - t0) / 1e9));
        } finally {
            Folders.deleteQuietly(out);
            Folders.deleteQuietly(in.getParent());
        }
    }

    private static StageEvents.Progress progress(StageEvents.StageRequest req, double percent, String message) {
        return new StageEvents.Progress(StageEvents.SCHEMA_VERSION, req.jobId(), req.attemptId(), Stage.EXPORT, Instant.now(),
                percent, message, Map.of());
    }

    private void send(String key, String payload) {
        try {
            kafka.send(Topics.STAGE_EVENTS, key, payload).get(30, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new IllegalStateException("cannot report to " + Topics.STAGE_EVENTS + ": " + e.getMessage(), e);
        }
    }

}
