package dev.hexforge.compileservice;

import dev.hexforge.stage.StageServiceConfig;
import dev.hexforge.stage.StageServices;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Import;

/** Consumes compile requests and builds NPU bundles with the passes from libs/compile. */
@SpringBootApplication
@Import(StageServiceConfig.class)
@EnableConfigurationProperties(CompileServiceProperties.class)
public class CompileServiceApplication {

    public static void main(String[] args) {
        start(args);
    }

    /** Starts the service (compile-service.properties over the shared stage-service.properties), so it can share a JVM. */
    public static ConfigurableApplicationContext start(String... args) {
        return StageServices.start(CompileServiceApplication.class, "compile-service", args);
    }
}
