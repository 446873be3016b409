package dev.hexforge.compileservice;

import dev.hexforge.contracts.Stage;
import dev.hexforge.pass.CompilePass;
import dev.hexforge.contracts.StageEvents;
import dev.hexforge.stage.Attempt;
import dev.hexforge.stage.StageServiceProperties;
import dev.hexforge.stage.StageWorker;
import dev.hexforge.store.ArtifactStore;
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

    CompileWorker(KafkaTemplate<String, String> kafka, ArtifactStore store, StageServiceProperties settings,
                  CompileServiceProperties compile) {
        super(Stage.COMPILE, kafka, store, settings.workDir(), Duration.ofSeconds(5));
        this.sdkRoot = compile.qnnSdkRoot();
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
