package dev.hexforge.compileservice;

import dev.hexforge.contracts.Stage;
import dev.hexforge.pass.CompilePass;
import dev.hexforge.contracts.StageEvents;
import dev.hexforge.stage.Attempt;
import dev.hexforge.stage.StageWorker;
import dev.hexforge.store.ArtifactStore;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.stereotype.Component;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

/** Runs {@link CompilePass} on the export stage's static graphs for the job's target and stores the bundle. */
@Component
class CompileWorker extends StageWorker {
    private final String sdkRoot;

    CompileWorker(KafkaTemplate<String, String> kafka, ArtifactStore store, @Value("${hexforge.work-dir}") Path work,
                  @Value("${hexforge.qnn-sdk-root:}") String sdkRoot) {
        super(Stage.COMPILE, kafka, store, work, Duration.ofSeconds(5));
        this.sdkRoot = sdkRoot;
    }

    @Override
    protected String startMessage(StageEvents.StageRequest request) {
        return "compiling for " + request.spec().compile().target() + " on " + request.spec().compile().soc();
    }

    @Override
    protected StageEvents.Completed run(Attempt a) {
        CompilePass.Result r = CompilePass.run(a.model(), CompilePass.options(a.spec().compile(),
                sdkRoot.isBlank() ? null : Path.of(sdkRoot)), a.dir().resolve("bundle"));
        a.progress(90, "storing the bundle", Map.of(), true);
        return a.completed(List.of(a.storeOutput(r.bundle(), r.kind())), r.report());
    }
}
