package dev.hexforge.gateway;

import dev.hexforge.contracts.Capabilities;
import dev.hexforge.contracts.Stage;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

import java.util.Arrays;
import java.util.Set;
import java.util.stream.Collectors;

@Configuration
class GatewayConfig {

    /** What this deployment can run, from configuration (the stage services it starts). */
    @Bean
    Capabilities capabilities(@Value("${hexforge.stages}") String stages, @Value("${hexforge.quantize-methods}") String methods,
                              @Value("${hexforge.compile-targets}") String targets, @Value("${hexforge.benchmark-backends}") String backends) {
        Set<Stage> s = Arrays.stream(stages.split(",")).map(String::trim).filter(x -> !x.isEmpty()).map(id -> {
            Stage st = Stage.parse(id);
            if (st == null) {
                throw new IllegalArgumentException("hexforge.stages: unknown stage '" + id + "'");
            }
            return st;
        }).collect(Collectors.toSet());
        return new Capabilities(s, split(methods), split(targets), split(backends));
    }

    @Bean
    dev.hexforge.store.ArtifactStore artifactStore(@Value("${hexforge.s3.endpoint}") String endpoint,
                                                   @Value("${hexforge.s3.access-key}") String access,
                                                   @Value("${hexforge.s3.secret-key}") String secret) {
        return new dev.hexforge.store.ArtifactStore(endpoint, access, secret);
    }

    private static Set<String> split(String csv) {
        return Arrays.stream(csv.split(",")).map(String::trim).filter(x -> !x.isEmpty()).collect(Collectors.toSet());
    }
}
