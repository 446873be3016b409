package dev.hexforge.stage;

import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.boot.convert.DurationStyle;
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
    public record Worker(@DefaultValue(THREADS) int threads, @DefaultValue(HEARTBEAT) Duration heartbeat,
                         @DefaultValue(CACHE_SIZE) DataSize cacheSize, @DefaultValue(REPORT_INTERVAL) Duration reportInterval,
                         @DefaultValue(STORE_RETRY) Duration storeRetry) {
        static final String THREADS = "1";
        static final String HEARTBEAT = "10s";
        static final String CACHE_SIZE = "20GB";
        static final String REPORT_INTERVAL = "30s";
        static final String STORE_RETRY = "60s";
        /** The defaults above, for a worker made without configuration (tests). */
        public static final Worker DEFAULTS = new Worker(Integer.parseInt(THREADS), DurationStyle.detectAndParse(HEARTBEAT),
                DataSize.parse(CACHE_SIZE), DurationStyle.detectAndParse(REPORT_INTERVAL), DurationStyle.detectAndParse(STORE_RETRY));
    }
}
