package dev.hexforge.stage;

import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.util.unit.DataSize;

import java.nio.file.Path;
import java.time.Duration;

/**
 * The {@code hexforge.*} settings every stage service has (stage-service.properties gives the deployment defaults).
 *
 * @param s3          the artifact storage
 * @param workDir     where attempts unpack their inputs and write their outputs
 * @param inputRoots  the server folders a job may name (comma-separated; none unless the operator lists them)
 * @param inputDenied folders under those roots that stay out of reach
 * @param worker      the attempt pool
 */
@ConfigurationProperties("hexforge")
public record StageServiceProperties(S3 s3, Path workDir, @DefaultValue("") String inputRoots, @DefaultValue("") String inputDenied,
                                     @DefaultValue Worker worker) {

    /** @param publicEndpoint where clients outside the fleet reach the storage, which presigned URLs name (default: endpoint) */
    public record S3(String endpoint, String publicEndpoint, String accessKey, String secretKey) {
        public String publicEndpointOrEndpoint() {
            return publicEndpoint == null || publicEndpoint.isBlank() ? endpoint : publicEndpoint;
        }
    }

    /**
     * @param threads        attempts run at once
     * @param heartbeat      how often a running attempt says it is alive
     * @param cacheSize      the local cache of downloaded inputs
     * @param reportInterval how often the service reports its heap to the gateway
     * @param storeRetry     how long an attempt keeps trying to store its output while the object store does not answer
     */
    public record Worker(@DefaultValue("1") int threads, @DefaultValue("10s") Duration heartbeat,
                         @DefaultValue("20GB") DataSize cacheSize, @DefaultValue("30s") Duration reportInterval,
                         @DefaultValue("60s") Duration storeRetry) {
    }
}
