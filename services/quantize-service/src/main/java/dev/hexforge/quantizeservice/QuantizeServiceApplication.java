package dev.hexforge.quantizeservice;

import dev.hexforge.stage.StageServiceConfig;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Import;

/** Consumes quantize requests and runs the quantize pass from libs/quant. */
@SpringBootApplication
@Import(StageServiceConfig.class)
public class QuantizeServiceApplication {

    public static void main(String[] args) {
        start(args);
    }

    /** Starts the service with its own configuration file (quantize-service.properties), so it can share a JVM. */
    public static ConfigurableApplicationContext start(String... args) {
        return new SpringApplicationBuilder(QuantizeServiceApplication.class)
                .properties("spring.config.name=quantize-service")
                .run(args);
    }

}
