package dev.hexforge.artifactservice;

import dev.hexforge.stage.StageServiceConfig;
import dev.hexforge.stage.StageServices;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Import;

/**
 * Owns the artifact catalogue: registers every stage output (from the stage events), signs it, runs the sign stage
 * (provenance) and hands out short-lived presigned download URLs to the gateway.
 */
@SpringBootApplication
@Import(StageServiceConfig.class)
@org.springframework.boot.context.properties.EnableConfigurationProperties(ArtifactServiceProperties.class)
public class ArtifactServiceApplication {

    /** Requests whose path is not in plain form are refused before the internal-secret check sees them. */
    @org.springframework.context.annotation.Bean
    org.springframework.boot.web.servlet.FilterRegistrationBean<dev.hexforge.web.RequestFirewall> requestFirewall() {
        return dev.hexforge.web.RequestFirewall.registration();
    }

    public static void main(String[] args) {
        start(args);
    }

    /** Starts the service (artifact-service.properties over the shared stage-service.properties), so it can share a JVM. */
    public static ConfigurableApplicationContext start(String... args) {
        return StageServices.start(ArtifactServiceApplication.class, "artifact-service", args);
    }
}
