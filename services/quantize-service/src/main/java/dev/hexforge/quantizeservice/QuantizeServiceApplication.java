package dev.hexforge.quantizeservice;

import dev.hexforge.stage.StageServiceConfig;
import dev.hexforge.stage.StageServices;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Import;

/** Consumes quantize requests and runs the quantize pass from libs/quant. */
@SpringBootApplication
@Import(StageServiceConfig.class)
public class QuantizeServiceApplication {

    public static void main(String[] args) {
        start(args);
    }

    /** Starts the service (quantize-service.properties over the shared stage-service.properties), so it can share a JVM. */
    public static ConfigurableApplicationContext start(String... args) {
        return StageServices.start(QuantizeServiceApplication.class, "quantize-service", args);
    }
}
