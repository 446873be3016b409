package dev.hexforge.gateway.auth;

import java.util.Optional;
import java.util.UUID;

/** The device tokens the filter authenticates: kept by the device package, which implements this. */
public interface DeviceTokens {
    /** What every device token starts with, so the filter knows one from an API token before looking it up. */
    String PREFIX = "hxd_";

    /** The device a token belongs to, or empty for none. */
    Optional<Device> device(String token);

    /** A device as a request is authenticated: its id and its tenant. */
    record Device(UUID id, String tenant) {
    }
}
