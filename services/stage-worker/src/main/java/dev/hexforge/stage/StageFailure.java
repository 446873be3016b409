package dev.hexforge.stage;

import dev.hexforge.contracts.StageEvents.StageError;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/** A stage that ran and decided the job cannot go on (an accuracy gate, bad data), with its report. */
public final class StageFailure extends RuntimeException {
    private final StageError error;
    private final Map<String, Object> report;

    public StageFailure(StageError error, Map<String, Object> report) {
        super(error.message());
        this.error = error;
        this.report = Collections.unmodifiableMap(new LinkedHashMap<>(report)); // reports hold nulls
    }

    public StageError error() {
        return error;
    }

    public Map<String, Object> report() {
        return report;
    }
}
