package dev.hexforge.stage;

import dev.hexforge.store.ArtifactStore;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/** The beans every stage service needs besides Kafka: the artifact store from {@code hexforge.s3.*}. */
@Configuration
public class StageServiceConfig {

    @Bean
    ArtifactStore artifactStore(@Value("${hexforge.s3.endpoint}") String endpoint,
                                @Value("${hexforge.s3.access-key}") String access,
                                @Value("${hexforge.s3.secret-key}") String secret) {
        return new ArtifactStore(endpoint, access, secret);
    }
}
