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
     * Cataloguing an accepted output needs the database and the object store (its signature is stored there): while
     * either is away the event is tried again until it is back, its offset uncommitted, so no accepted output goes
     * uncatalogued (the sign stage waits for the rows). Any other failure, a defect, is tried twice more and logged.
     */
    @org.springframework.context.annotation.Bean
    org.springframework.kafka.listener.CommonErrorHandler catalogueErrors() {
        org.springframework.kafka.listener.DefaultErrorHandler h = new org.springframework.kafka.listener.DefaultErrorHandler(
                (record, ex) -> LOG.error("an accepted output of job {} was not catalogued", record.key(), ex),
                new org.springframework.util.backoff.FixedBackOff(1_000, 2));
        h.setBackOffFunction((record, ex) -> dependencyAway(ex) ? dev.hexforge.web.DatabaseAway.untilBack() : null);
        return h;
    }

    /** The database or the object store away for now, anywhere in the causes. */
    static boolean dependencyAway(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof org.springframework.transaction.CannotCreateTransactionException) {
                return true;
            }
        }
        return dev.hexforge.web.DatabaseAway.in(e) || dev.hexforge.store.ArtifactStore.unreachable(e);
    }

    public static void main(String[] args) {
        start(args);
    }

    /** Starts the service (artifact-service.properties over the shared stage-service.properties), so it can share a JVM. */
    public static ConfigurableApplicationContext start(String... args) {
        return StageServices.start(ArtifactServiceApplication.class, "artifact-service", args);
    }
}
