package dev.hexforge.store;

import io.minio.errors.ErrorResponseException;
import io.minio.messages.ErrorResponse;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Which store failures are "away for now" (the caller waits and tries again) and which are answers to act on. */
class UnreachableTest {
    static ArtifactStore.StoreException storing(Throwable cause) {
        return new ArtifactStore.StoreException("fetching folder x: " + cause.getMessage(), cause);
    }

    static ErrorResponseException s3Error(String code) {
        return new ErrorResponseException(new ErrorResponse(code, "message of " + code, "hexforge", "objects/x", "host", "req", "/"), null, "");
    }

    @Test
    void aServerThatDoesNotAnswerOrDropsTheConnectionIsAway() {
        assertTrue(ArtifactStore.unreachable(storing(new java.net.ConnectException("Connection refused"))));
        assertTrue(ArtifactStore.unreachable(storing(new java.net.SocketException("Connection reset"))));
        assertTrue(ArtifactStore.unreachable(storing(new java.io.IOException("unexpected end of stream", new java.io.EOFException()))));
    }

    @Test
    void s3ErrorsThatSayTryAgainAreAway() {
        // what s3proxy answered for a read in flight as it stopped (found by FaultHarnessTest: the attempt failed INTERNAL)
        assertTrue(ArtifactStore.unreachable(storing(s3Error("InternalError"))));
        assertTrue(ArtifactStore.unreachable(storing(s3Error("ServiceUnavailable"))));
        assertTrue(ArtifactStore.unreachable(storing(s3Error("SlowDown"))));
    }

    @Test
    void answersAndFailuresOutsideTheStoreAreNot() {
        assertFalse(ArtifactStore.unreachable(storing(s3Error("NoSuchKey"))));
        assertFalse(ArtifactStore.unreachable(storing(s3Error("AccessDenied"))));
        assertFalse(ArtifactStore.unreachable(new ArtifactStore.StoreException("object x is corrupt in storage: digest y")));
        assertFalse(ArtifactStore.unreachable(new java.net.ConnectException("another service's connection")), "not a store failure");
    }
}
