package dev.hexforge.finetuneservice;

import dev.hexforge.stage.StageServiceConfig;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Import;

/** Consumes finetune and merge requests and runs LoRA training and merging from libs/lora. */
@SpringBootApplication
@Import(StageServiceConfig.class)
public class FinetuneServiceApplication {

    public static void main(String[] args) {
        start(args);
    }

    /** Starts the service with its own configuration file (finetune-service.properties), so it can share a JVM. */
    public static ConfigurableApplicationContext start(String... args) {
        return new SpringApplicationBuilder(FinetuneServiceApplication.class)
                .properties("spring.config.name=finetune-service")
                .run(args);
    }
}
