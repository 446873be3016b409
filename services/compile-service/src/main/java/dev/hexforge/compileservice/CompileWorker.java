package dev.hexforge.compileservice;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.hexforge.compile.CompileException;
import dev.hexforge.compile.CompileOptions;
import dev.hexforge.compile.OrtQnnBundler;
import dev.hexforge.compile.QnnSdk;
import dev.hexforge.contracts.ContractsJson;
import dev.hexforge.contracts.JobSpec;
import dev.hexforge.contracts.Stage;
import dev.hexforge.contracts.StageEvents;
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

/** Compiles the export stage's static graphs for the job's target and stores the bundle. */
@Component
class CompileWorker extends StageWorker {
    private final String sdkRoot;

    CompileWorker(KafkaTemplate<String, String> kafka, ArtifactStore store, @Value("${hexforge.work-dir}") Path work,
                  @Value("${hexforge.qnn-sdk-root:}") String sdkRoot) {
        super(Stage.COMPILE, kafka, store, work, Duration.ofSeconds(5));
        this.sdkRoot = sdkRoot;
    }

    @KafkaListener(id = "compile-requests", topics = "hexforge.stage.compile.requests.v1", groupId = "hexforge-compile-service",
            containerFactory = StageServiceConfig.STAGE_REQUESTS)
    void onRequest(String payload, Acknowledgment ack) {
        submit(payload, ack);
    }

    @Override
    protected String startMessage(StageEvents.StageRequest request) {
        return "compiling for " + request.spec().compile().target() + " on " + request.spec().compile().soc();
    }

    @Override
    protected StageEvents.Completed run(Attempt a) {
        JobSpec.Compile c = a.spec().compile();
        CompileOptions opt = CompileOptions.of(c.soc(), c.htpArch());
        Path out = a.dir().resolve("bundle");
        long t0 = System.nanoTime();
        ObjectNode manifest;
        if (c.target().equals(OrtQnnBundler.TARGET)) {
            manifest = OrtQnnBundler.build(a.model(), out, opt);
        } else {
            if (sdkRoot.isBlank()) { // the gateway refuses such jobs; a request that got here anyway fails clearly
                throw new CompileException("target " + c.target() + " needs a QNN SDK and this compile service has none",
                        "set QNN_SDK_ROOT on the compile service, or use compile.target: ort-qnn");
            }
            manifest = new QnnSdk(Path.of(sdkRoot)).build(c.target(), a.model(), out, opt);
        }
        a.progress(90, "storing the bundle", Map.of(), true);
        StageEvents.ArtifactRef ref = a.storeOutput(out, c.target() + "-bundle");
        Map<String, Object> report = ContractsJson.MAPPER.convertValue(manifest, Map.class);
        report.put("seconds", (System.nanoTime() - t0) / 1e9);
        return a.completed(List.of(ref), report);
    }

    @Override
    protected StageEvents.StageError triage(Exception e) {
        if (e instanceof CompileException ce) {
            return new StageEvents.StageError(ce.code(), message(e), ce.hint());
        }
        return super.triage(e);
    }
}
