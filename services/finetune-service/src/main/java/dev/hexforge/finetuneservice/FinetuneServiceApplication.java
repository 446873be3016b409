package dev.hexforge.finetuneservice;

import dev.hexforge.stage.StageServiceConfig;
import dev.hexforge.stage.StageServices;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Import;

/** Consumes finetune and merge requests and runs LoRA training and merging from libs/lora. */
@SpringBootApplication
@Import(StageServiceConfig.class)
public class FinetuneServiceApplication {

    public static void main(String[] args) {
        start(args);
    }

    /** Starts the service (finetune-service.properties over the shared stage-service.properties), so it can share a JVM. */
    public static ConfigurableApplicationContext start(String... args) {
        return StageServices.start(FinetuneServiceApplication.class, "finetune-service", args);
    }
}
