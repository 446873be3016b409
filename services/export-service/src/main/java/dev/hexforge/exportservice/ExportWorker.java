package dev.hexforge.exportservice;

import dev.hexforge.checkpoint.Checkpoint;
import dev.hexforge.contracts.JobSpec;
import dev.hexforge.contracts.Stage;
import dev.hexforge.contracts.StageEvents;
import dev.hexforge.onnx.export.DecoderExporter;
import dev.hexforge.onnx.export.ExportException;
import dev.hexforge.onnx.export.ExportInfo;
import dev.hexforge.onnx.export.ExportOptions;
import dev.hexforge.onnx.export.LinearFormat;
import dev.hexforge.onnx.export.Variant;
import dev.hexforge.quant.QuantizedCheckpoint;
import dev.hexforge.quant.QuantizedModel;
import dev.hexforge.quant.onnx.MatMulNBitsFormat;
import dev.hexforge.quant.onnx.QdqFormat;
import dev.hexforge.stage.Attempt;
import dev.hexforge.stage.StageServiceConfig;
import dev.hexforge.stage.StageWorker;
import dev.hexforge.store.ArtifactStore;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.support.Acknowledgment;
import org.springframework.stereotype.Component;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

/** Exports the job's model (or the quantized checkpoint of the quantize stage) to ONNX and stores the folder. */
@Component
class ExportWorker extends StageWorker {

    ExportWorker(KafkaTemplate<String, String> kafka, ArtifactStore store, @Value("${hexforge.work-dir}") Path work) {
        super(Stage.EXPORT, kafka, store, work, Duration.ofSeconds(5));
    }

    @KafkaListener(id = "export-requests", topics = "hexforge.stage.export.requests.v1", groupId = "hexforge-export-service",
            containerFactory = StageServiceConfig.STAGE_REQUESTS)
    void onRequest(String payload, Acknowledgment ack) {
        submit(payload, ack);
    }

    @Override
    protected String startMessage(StageEvents.StageRequest request) {
        return "exporting";
    }

    @Override
    protected StageEvents.Completed run(Attempt a) throws java.io.IOException {
        JobSpec spec = a.spec();
        JobSpec.Export e = spec.export();
        Variant v = e.variant().equals("static") ? Variant.STATIC : Variant.DYNAMIC;
        Path model = a.model();
        Path out = a.dir().resolve("out");
        long t0 = System.nanoTime();
        try (Checkpoint ckpt = Checkpoint.open(model)) {
            LinearFormat format = LinearFormat.FLOAT;
            String kind = "onnx-" + v.name().toLowerCase();
            if (QuantizedCheckpoint.isQuantized(model)) {
                QuantizedModel qm = QuantizedCheckpoint.read(ckpt);
                boolean nbits = spec.quantize().format().equals("matmulnbits");
                format = nbits ? new MatMulNBitsFormat(qm, spec.quantize().accuracyLevel()) : new QdqFormat(qm);
                kind += nbits ? "-matmulnbits" : "-qdq";
            }
            ExportInfo info = DecoderExporter.export(ckpt, out, new ExportOptions(v, e.seq(), e.ctx(), e.opset()), format,
                    (what, done, total) -> a.progress(total == 0 ? 0 : 90.0 * done / total, what, Map.of(), false));
            writeReference(ckpt, model, out);
            Path encodings = model.resolve(dev.hexforge.quant.AimetEncodings.FILE);
            if (java.nio.file.Files.isRegularFile(encodings)) { // the QNN converter's quantization overrides travel with the graphs
                java.nio.file.Files.copy(encodings, out.resolve(dev.hexforge.quant.AimetEncodings.FILE));
            }
            StageEvents.ArtifactRef ref = a.storeOutput(out, kind);
            return a.completed(List.of(ref), Map.of("variant", v.name().toLowerCase(), "graphs", info.graphs(),
                    "seconds", (System.nanoTime() - t0) / 1e9));
        }
    }

    /**
     * The host's reference for on-device accuracy ({@link dev.hexforge.eval.DeviceReference}), computed by the Java
     * reference forward over the weights the graphs hold (fake-quantized for a quantized model).
     */
    static void writeReference(Checkpoint ckpt, Path model, Path out) {
        dev.hexforge.forward.DecoderWeights w = dev.hexforge.forward.DecoderWeights.load(ckpt);
        if (QuantizedCheckpoint.isQuantized(model)) {
            w = QuantizedCheckpoint.read(ckpt).fakeQuantized(w);
        }
        try (dev.hexforge.tokenizer.Tokenizer tok = dev.hexforge.tokenizer.Tokenizer.load(model)) {
            dev.hexforge.eval.DeviceReference.compute(new dev.hexforge.forward.DecoderForward(w), tok).write(out);
        }
    }

    @Override
    protected StageEvents.StageError triage(Exception e) {
        if (e instanceof ExportException) {
            return new StageEvents.StageError("EXPORT_FAILED", message(e), "see the message; the export left nothing behind");
        }
        return super.triage(e);
    }
}
