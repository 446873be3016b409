package dev.hexforge.contracts;

/** Kafka topic names. The version suffix changes when a message's schema changes incompatibly. */
public final class Topics {
    /** Events every stage service emits (progress, completed, failed), consumed by the gateway. */
    public static final String STAGE_EVENTS = "hexforge.stage-events.v1";

    /**
     * Stage events the gateway could not apply after its retries, kept as they arrived (with the failure in the
     * record's headers) instead of being dropped; the job names the failure as EVENT_UNPROCESSABLE.
     */
    public static final String STAGE_EVENTS_DEAD = "hexforge.stage-events.dlt.v1";

    /** Control messages every stage service instance receives (each in its own group): cancellations. */
    public static final String CONTROL = "hexforge.control.v1";
    /**
     * The completed events the gateway accepted (the current attempt of a running job), written in the transaction
     * that applies them: the artifact catalogue registers outputs from these only, so a superseded attempt that
     * finishes late, or a redelivered one, adds nothing the job does not own.
     */
    public static final String ACCEPTED_OUTPUTS = "hexforge.accepted-outputs.v1";

    /**
     * What each stage service instance can hold ({@link StageEvents.ServiceReport}: its heap), sent when it starts
     * and every half minute; the gateway refuses at submission a job whose model none of a stage's services can hold.
     */
    public static final String SERVICES = "hexforge.services.v1";

    private Topics() {
    }

    /**
     * The consumer group of a stage's request listeners: one per stage service, so its replicas share the requests
     * (finetune and merge run in the finetune service, sign in the artifact service).
     */
    public static String requestGroup(Stage stage) {
        return switch (stage) {
            case FINETUNE, MERGE -> "hexforge-finetune-service";
            case SIGN -> "hexforge-artifact-service-sign";
            default -> "hexforge-" + stage.id() + "-service";
        };
    }

    /** Requests for one stage, consumed by that stage's service in a consumer group. */
    public static String requests(Stage stage) {
        return "hexforge.stage." + stage.id() + ".requests.v1";
    }
}
