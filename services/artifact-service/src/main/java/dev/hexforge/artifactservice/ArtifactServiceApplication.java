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
    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(ArtifactServiceApplication.class);

    /** Requests whose path is not in plain form are refused before the internal-secret check sees them. */
    @org.springframework.context.annotation.Bean
    org.springframework.boot.web.servlet.FilterRegistrationBean<dev.hexforge.web.RequestFirewall> requestFirewall() {
        return dev.hexforge.web.RequestFirewall.registration();
    }

    /**
     * The internal API answers 503 with Retry-After while the database or the object store is away (it was a 500, so
     * the gateway passed a 500 on and a device runner fetching its bundle gave the benchmark up; found by the soak).
     */
    @org.springframework.context.annotation.Bean
    org.springframework.boot.web.servlet.FilterRegistrationBean<dev.hexforge.web.UnavailableFilter> unavailableFilter() {
        return dev.hexforge.web.UnavailableFilter.registration();
    }

    /**
     * Cataloguing an accepted output needs the database and the object store (its signature is stored there): while
     * either is away the event is tried again until it is back, its offset uncommitted, so no accepted output goes
     * uncatalogued (the sign stage waits for the rows). Any other failure, a defect, is tried twice more and logged.
     */
    @org.springframework.context.annotation.Bean
    org.springframework.kafka.listener.CommonErrorHandler catalogueErrors() {
        org.springframework.kafka.listener.DefaultErrorHandler h = new org.springframework.kafka.listener.DefaultErrorHandler(
                (record, ex) -> LOG.error("an accepted output of job {} was not catalogued", record.key(), ex),
                new org.springframework.util.backoff.FixedBackOff(1_000, 2));
        h.setBackOffFunction((record, ex) -> dev.hexforge.web.UnavailableFilter.dependencyAway(ex).isPresent()
                ? dev.hexforge.web.DatabaseAway.untilBack() : null);
        return h;
    }

    public static void main(String[] args) {
        start(args);
    }

    /** Starts the service (artifact-service.properties over the shared stage-service.properties), so it can share a JVM. */
    public static ConfigurableApplicationContext start(String... args) {
        return StageServices.start(ArtifactServiceApplication.class, "artifact-service", args);
    }
}
