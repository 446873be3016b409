package dev.hexforge.gateway;

import dev.hexforge.contracts.Capabilities;
import dev.hexforge.contracts.Stage;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

import java.util.Arrays;
import java.util.Set;
import java.util.stream.Collectors;

@Configuration
@org.springframework.boot.context.properties.EnableConfigurationProperties(GatewayProperties.class)
class GatewayConfig {
    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(GatewayConfig.class);

    /** What this deployment can run, from configuration (the stage services it starts). */
    @Bean
    Capabilities capabilities(GatewayProperties settings) {
        Set<Stage> s = Arrays.stream(settings.stages().split(",")).map(String::trim).filter(x -> !x.isEmpty()).map(id -> {
            Stage st = Stage.parse(id);
            if (st == null) {
                throw new IllegalArgumentException("hexforge.stages: unknown stage '" + id + "'");
            }
            return st;
        }).collect(Collectors.toSet());
        return new Capabilities(s, split(settings.quantizeMethods()), split(settings.compileTargets()), split(settings.benchmarkBackends()));
    }

    /**
     * What happens to a stage event the gateway cannot apply: while the database is away, tried again until it is
     * back; otherwise tried again {@code hexforge.event-retries} times {@code hexforge.event-retry-backoff} apart (an
     * unreadable or inconsistent event is not tried again, it would fail the same way), then kept on the dead-letter topic
     * with the failure in its headers, and its job failed with EVENT_UNPROCESSABLE — never dropped silently.
     */
    @Bean
    org.springframework.kafka.listener.CommonErrorHandler stageEventErrors(
            org.springframework.kafka.core.KafkaTemplate<String, String> kafka, JobService jobs,
            GatewayProperties settings) {
        org.springframework.kafka.listener.DeadLetterPublishingRecoverer dead = new org.springframework.kafka.listener.DeadLetterPublishingRecoverer(
                kafka, (record, ex) -> new org.apache.kafka.common.TopicPartition(dev.hexforge.contracts.Topics.STAGE_EVENTS_DEAD, -1));
        org.springframework.kafka.listener.ConsumerRecordRecoverer recoverer = (record, ex) -> {
            dead.accept(record, ex);
            Throwable cause = ex;
            while (cause.getCause() != null && cause != cause.getCause()) {
                cause = cause.getCause();
            }
            String reason = cause.getMessage() == null ? cause.getClass().getSimpleName() : cause.getMessage();
            LOG.warn("stage event kept on {}: {}", dev.hexforge.contracts.Topics.STAGE_EVENTS_DEAD, reason, ex);
            try {
                dev.hexforge.contracts.StageEvents.Event e = dev.hexforge.contracts.ContractsJson.read(String.valueOf(record.value()),
                        dev.hexforge.contracts.StageEvents.Event.class);
                Conflicts.retry(() -> {
                    jobs.unprocessable(e, reason);
                    return null;
                });
            } catch (RuntimeException notAnEvent) {
                LOG.warn("the dead stage event names no job it could be reported on: {}", notAnEvent.getMessage());
            }
        };
        org.springframework.kafka.listener.DefaultErrorHandler handler = new org.springframework.kafka.listener.DefaultErrorHandler(
                recoverer, new org.springframework.util.backoff.FixedBackOff(settings.eventRetryBackoff().toMillis(), settings.eventRetries()));
        handler.addNotRetryableExceptions(IllegalArgumentException.class); // unreadable or inconsistent: the same every time
        // the database away is no fault of the event (and its job could not even be failed meanwhile): the event waits,
        // its offset uncommitted, until the database is back; later events of the partition wait behind it
        handler.setBackOffFunction((record, ex) -> dev.hexforge.web.UnavailableFilter.dependencyAway(ex).isPresent() ? dev.hexforge.web.DatabaseAway.untilBack() : null);
        return handler;
    }

    /** Requests whose path is not in plain form are refused before any other filter sees them. */
    @Bean
    org.springframework.boot.web.servlet.FilterRegistrationBean<dev.hexforge.web.RequestFirewall> requestFirewall() {
        return dev.hexforge.web.RequestFirewall.registration();
    }

    /**
     * The periodic tasks (outbox relay, stall and lease watches) run every second or two: while the database is away
     * each run fails the same way, so that is said as one warning a minute, not as a stack trace a second. Any other
     * failure of a task is logged with its trace.
     */
    @Bean
    org.springframework.boot.task.ThreadPoolTaskSchedulerCustomizer quietWhileAway() {
        java.util.concurrent.atomic.AtomicLong lastWarning = new java.util.concurrent.atomic.AtomicLong(System.nanoTime() - 61_000_000_000L);
        return scheduler -> scheduler.setErrorHandler(t -> {
            java.util.Optional<String> what = dev.hexforge.web.UnavailableFilter.dependencyAway(t);
            if (what.isPresent()) {
                long now = System.nanoTime();
                long last = lastWarning.get();
                if (now - last > 60_000_000_000L && lastWarning.compareAndSet(last, now)) {
                    LOG.warn("{} is unavailable; the periodic tasks wait for it (API requests answer 503 meanwhile)", what.get());
                }
                return;
            }
            LOG.error("a periodic task failed", t);
        });
    }

    /** Right after the firewall: a dependency away is a 503 with Retry-After, for the token check's reads too. */
    @Bean
    org.springframework.boot.web.servlet.FilterRegistrationBean<dev.hexforge.web.UnavailableFilter> unavailableFilter() {
        return dev.hexforge.web.UnavailableFilter.registration();
    }

    /** The server folders a job may name as inputs (none unless the operator lists them); stage services check again. */
    @Bean
    dev.hexforge.contracts.InputPolicy inputPolicy(GatewayProperties settings) {
        return dev.hexforge.contracts.InputPolicy.of(settings.inputRoots(), settings.inputDenied());
    }

    @Bean
    dev.hexforge.store.ArtifactStore artifactStore(GatewayProperties settings) {
        return new dev.hexforge.store.ArtifactStore(settings.s3().endpoint(), settings.s3().accessKey(), settings.s3().secretKey());
    }

    /** What /api/v1/ready asks: the database, the broker (with the gateway's own Kafka settings) and the object store. */
    @Bean(destroyMethod = "close")
    Readiness readiness(javax.sql.DataSource database, org.springframework.kafka.core.KafkaAdmin kafka, dev.hexforge.store.ArtifactStore store) {
        return new Readiness(database, kafka.getConfigurationProperties(), store);
    }

    /** The OpenAPI document's header: every /api/v1 call takes a bearer API token. */
    @Bean
    io.swagger.v3.oas.models.OpenAPI openApi() {
        return new io.swagger.v3.oas.models.OpenAPI()
                .info(new io.swagger.v3.oas.models.info.Info().title("Hexforge API").version("v1")
                        .description("Conversion jobs (fine-tune, quantize, export, compile, sign, benchmark), model uploads, "
                                + "signed artifacts and API tokens. Every call but /api/v1/health and /api/v1/ready needs Authorization: Bearer <token>."))
                .components(new io.swagger.v3.oas.models.Components().addSecuritySchemes("token",
                        new io.swagger.v3.oas.models.security.SecurityScheme().type(io.swagger.v3.oas.models.security.SecurityScheme.Type.HTTP)
                                .scheme("bearer")))
                .addSecurityItem(new io.swagger.v3.oas.models.security.SecurityRequirement().addList("token"));
    }

    private static Set<String> split(String csv) {
        return Arrays.stream(csv.split(",")).map(String::trim).filter(x -> !x.isEmpty()).collect(Collectors.toSet());
    }
}
