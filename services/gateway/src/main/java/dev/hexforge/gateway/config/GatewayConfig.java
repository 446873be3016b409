package dev.hexforge.gateway.config;

import dev.hexforge.contracts.Capabilities;
import dev.hexforge.contracts.InputPolicy;
import dev.hexforge.contracts.Stage;
import dev.hexforge.store.ArtifactStore;
import dev.hexforge.web.RequestFirewall;
import dev.hexforge.web.UnavailableFilter;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.task.ThreadPoolTaskSchedulerCustomizer;
import org.springframework.boot.web.servlet.FilterRegistrationBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.kafka.core.KafkaAdmin;

import java.util.Arrays;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Collectors;
import javax.sql.DataSource;

@Configuration
@EnableConfigurationProperties(GatewayProperties.class)
public class GatewayConfig {
    private static final Logger LOG = LoggerFactory.getLogger(GatewayConfig.class);

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

    /** Requests whose path is not in plain form are refused before any other filter sees them. */
    @Bean
    FilterRegistrationBean<RequestFirewall> requestFirewall() {
        return RequestFirewall.registration();
    }

    /**
     * The periodic tasks (outbox relay, stall and lease watches) run every second or two: while the database is away
     * each run fails the same way, so that is said as one warning a minute, not as a stack trace a second. Any other
     * failure of a task is logged with its trace.
     */
    @Bean
    ThreadPoolTaskSchedulerCustomizer quietWhileAway() {
        AtomicLong lastWarning = new AtomicLong(System.nanoTime() - 61_000_000_000L);
        return scheduler -> scheduler.setErrorHandler(t -> {
            Optional<String> what = UnavailableFilter.dependencyAway(t);
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
    FilterRegistrationBean<UnavailableFilter> unavailableFilter() {
        return UnavailableFilter.registration();
    }

    /** The server folders a job may name as inputs (none unless the operator lists them); stage services check again. */
    @Bean
    InputPolicy inputPolicy(GatewayProperties settings) {
        return InputPolicy.of(settings.inputRoots(), settings.inputDenied());
    }

    @Bean
    ArtifactStore artifactStore(GatewayProperties settings) {
        return new ArtifactStore(settings.s3().endpoint(), settings.s3().accessKey(), settings.s3().secretKey());
    }

    /** What /api/v1/ready asks: the database, the broker (with the gateway's own Kafka settings) and the object store. */
    @Bean(destroyMethod = "close")
    Readiness readiness(DataSource database, KafkaAdmin kafka, ArtifactStore store) {
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
