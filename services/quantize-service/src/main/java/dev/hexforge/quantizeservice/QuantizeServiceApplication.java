package dev.hexforge.quantizeservice;

import dev.hexforge.store.ArtifactStore;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;

/** Consumes quantize requests and runs the quantize pass from libs/quant. */
@SpringBootApplication
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

    @Bean
    ArtifactStore artifactStore(@Value("${hexforge.s3.endpoint}") String endpoint, @Value("${hexforge.s3.access-key}") String access,
                                @Value("${hexforge.s3.secret-key}") String secret) {
        return new ArtifactStore(endpoint, access, secret);
    }
}
