package dev.hexforge.exportservice;

import dev.hexforge.stage.StageServiceConfig;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Import;

/** Consumes export requests and runs the ONNX export pass from libs/onnx. */
@SpringBootApplication
@Import(StageServiceConfig.class)
public class ExportServiceApplication {

    public static void main(String[] args) {
        start(args);
    }

    /** Starts the service with its own configuration file (export-service.properties), so it can share a JVM. */
    public static ConfigurableApplicationContext start(String... args) {
        return new SpringApplicationBuilder(ExportServiceApplication.class)
                .properties("spring.config.name=export-service")
                .run(args);
    }

}
