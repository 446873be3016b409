package dev.hexforge.gateway.job;

import java.util.UUID;

/** No job with that id for this tenant (another tenant's job looks the same: it does not exist for you). */
public class JobNotFoundException extends RuntimeException {
    public JobNotFoundException(UUID id) {
        super("no job " + id);
    }
}
