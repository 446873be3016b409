package dev.hexforge.exportservice;

import dev.hexforge.stage.StageServiceConfig;
import dev.hexforge.stage.StageServices;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Import;

/** Consumes export requests and runs the ONNX export pass from libs/onnx. */
@SpringBootApplication
@Import(StageServiceConfig.class)
public class ExportServiceApplication {

    public static void main(String[] args) {
        start(args);
    }

    /** Starts the service (export-service.properties over the shared stage-service.properties), so it can share a JVM. */
    public static ConfigurableApplicationContext start(String... args) {
        return StageServices.start(ExportServiceApplication.class, "export-service", args);
    }
}
