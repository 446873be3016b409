package dev.hexforge.artifactservice;

import dev.hexforge.stage.StageServiceConfig;
import dev.hexforge.stage.StageServices;
import dev.hexforge.web.DatabaseAway;
import dev.hexforge.web.RequestFirewall;
import dev.hexforge.web.UnavailableFilter;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.web.servlet.FilterRegistrationBean;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.kafka.listener.CommonErrorHandler;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.util.backoff.FixedBackOff;

/**
 * Owns the artifact catalogue: registers every stage output (from the stage events), signs it, runs the sign stage
 * (provenance) and hands out short-lived presigned download URLs to the gateway.
 */
@SpringBootApplication
@Import(StageServiceConfig.class)
@EnableConfigurationProperties(ArtifactServiceProperties.class)
public class ArtifactServiceApplication {
    private static final Logger LOG = LoggerFactory.getLogger(ArtifactServiceApplication.class);

    /** Requests whose path is not in plain form are refused before the internal-secret check sees them. */
    @Bean
    FilterRegistrationBean<RequestFirewall> requestFirewall() {
        return RequestFirewall.registration();
    }

    /**
     * The internal API answers 503 with Retry-After while the database or the object store is away (it was a 500, so
     * the gateway passed a 500 on and a device runner fetching its bundle gave the benchmark up; found by the soak).
     */
    @Bean
    FilterRegistrationBean<UnavailableFilter> unavailableFilter() {
        return UnavailableFilter.registration();
    }

    /**
     * Cataloguing an accepted output needs the database and the object store (its signature is stored there): while
     * either is away the event is tried again until it is back, its offset uncommitted, so no accepted output goes
     * uncatalogued (the sign stage waits for the rows). Any other failure, a defect, is tried twice more and logged.
     */
    @Bean
    CommonErrorHandler catalogueErrors() {
        DefaultErrorHandler h = new DefaultErrorHandler(
                (record, ex) -> LOG.error("an accepted output of job {} was not catalogued", record.key(), ex),
                new FixedBackOff(1_000, 2));
        h.setBackOffFunction((record, ex) -> UnavailableFilter.dependencyAway(ex).isPresent()
                ? DatabaseAway.untilBack() : null);
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
