package dev.hexforge.compileservice;

import dev.hexforge.stage.StageServiceConfig;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Import;

/** Consumes compile requests and builds NPU bundles with the passes from libs/compile. */
@SpringBootApplication
@Import(StageServiceConfig.class)
public class CompileServiceApplication {

    public static void main(String[] args) {
        start(args);
    }

    /** Starts the service with its own configuration file (compile-service.properties), so it can share a JVM. */
    public static ConfigurableApplicationContext start(String... args) {
        return new SpringApplicationBuilder(CompileServiceApplication.class)
                .properties("spring.config.name=compile-service")
                .run(args);
    }
}
