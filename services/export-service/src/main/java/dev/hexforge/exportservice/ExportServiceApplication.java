package dev.hexforge.exportservice;

import dev.hexforge.store.ArtifactStore;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;

/** Consumes export requests and runs the ONNX export pass from libs/onnx. */
@SpringBootApplication
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

    @Bean
    ArtifactStore artifactStore(@Value("${hexforge.s3.endpoint}") String endpoint, @Value("${hexforge.s3.access-key}") String access,
                                @Value("${hexforge.s3.secret-key}") String secret) {
        return new ArtifactStore(endpoint, access, secret);
    }
}
