package dev.hexforge.gateway.config;

import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.util.unit.DataSize;

import java.time.Duration;

/**
 * The gateway's {@code hexforge.*} settings (application.properties gives the deployment defaults). The polling
 * periods of its scheduled checks ({@code hexforge.outbox.poll-ms}, {@code device-lease-check-ms}, {@code
 * stall-check-ms}) and {@code event-consumers} are read by their annotations.
 *
 * @param stages            the stages this deployment runs (comma-separated): those it starts services for
 * @param quantizeMethods   the quantization methods its quantize services offer
 * @param compileTargets    the compile targets its compile services offer
 * @param benchmarkBackends the backends device runners can have (a benchmark also needs a registered runner of the tenant that offers them)
 * @param limits            request limits
 * @param workerMemory      the heap of the smallest stage service, when services do not report it (0: unknown)
 * @param eventRetries      how often a stage event the gateway cannot apply is tried before the dead-letter topic
 * @param eventRetryBackoff the wait between those tries
 * @param inputRoots        server folders a job may name (comma-separated; none unless the operator lists them)
 * @param inputDenied       folders under those roots that stay out of reach
 * @param s3                the artifact storage
 * @param examples          what the dashboard's form offers as a starting point
 * @param deviceLease       how long a device runner holds a benchmark task without a heartbeat
 * @param uploads           upload limits
 * @param bootstrapTokenFile where the first admin token is written (empty: printed to the log)
 * @param stageStallTimeout silence after which a running attempt is taken as stalled
 * @param maxAttempts       attempts of a stage before the job fails as stalled
 * @param dispatchTimeout   how long a dispatched attempt may wait for a free service
 * @param artifactService   the artifact service
 * @param internalToken     the shared secret sent on internal calls
 */
@ConfigurationProperties("hexforge")
public record GatewayProperties(String stages, @DefaultValue("rtn,gptq,awq") String quantizeMethods,
                         @DefaultValue("ort-qnn") String compileTargets, @DefaultValue("ort-cpu,ort-qnn,adb-qnn,genie") String benchmarkBackends,
                         @DefaultValue Limits limits, @DefaultValue("0B") DataSize workerMemory,
                         @DefaultValue("5") int eventRetries, @DefaultValue("1s") Duration eventRetryBackoff,
                         @DefaultValue("") String inputRoots, @DefaultValue("") String inputDenied, S3 s3,
                         @DefaultValue Examples examples, @DefaultValue("60s") Duration deviceLease, @DefaultValue Uploads uploads,
                         @DefaultValue("") String bootstrapTokenFile, @DefaultValue("2m") Duration stageStallTimeout,
                         @DefaultValue("3") int maxAttempts, @DefaultValue("30m") Duration dispatchTimeout,
                         ArtifactService artifactService, @DefaultValue("") String internalToken) {

    /** @param maxSequence the longest training or calibration sequence (attention memory grows with its square) */
    public record Limits(@DefaultValue("2048") int maxSequence) {
    }

    public record S3(String endpoint, String accessKey, String secretKey) {
    }

    /** @param modelPath a model folder; @param finetuneData a training file (standalone mode: the bundled ones) */
    public record Examples(@DefaultValue("") String modelPath, @DefaultValue("") String finetuneData) {
    }

    /** @param maxSize the largest upload; @param tenantQuota what one tenant may keep in uploads */
    public record Uploads(DataSize maxSize, @DefaultValue("500GB") DataSize tenantQuota) {
    }

    public record ArtifactService(String url) {
    }
}
