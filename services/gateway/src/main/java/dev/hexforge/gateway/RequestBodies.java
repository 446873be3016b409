package dev.hexforge.gateway;

import dev.hexforge.contracts.ContractsJson;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import org.springframework.http.HttpStatus;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Map;

/**
 * Request bodies read up to their limit and no further: a larger body is refused (413) before it is buffered,
 * whatever Content-Length claims.
 */
public final class RequestBodies {
    private RequestBodies() {
    }

    /** A body over its limit. */
    public static final class TooLargeException extends RuntimeException {
        TooLargeException(String what, int max) {
            super("the " + what + " is larger than " + max + " bytes");
        }
    }

    /** The body as UTF-8 text, at most {@code max} bytes of it. */
    public static String read(HttpServletRequest request, int max, String what) throws IOException {
        if (request.getContentLengthLong() > max) {
            throw new TooLargeException(what, max);
        }
        byte[] bytes = request.getInputStream().readNBytes(max + 1);
        if (bytes.length > max) {
            throw new TooLargeException(what, max);
        }
        return new String(bytes, StandardCharsets.UTF_8);
    }

    /**
     * The 413 answer, written and flushed here: the container closes a connection whose unread body is over its
     * swallow limit, and would drop an answer still in its buffer.
     */
    public static void answer(TooLargeException e, HttpServletResponse response) throws IOException {
        byte[] body = ContractsJson.MAPPER.writeValueAsBytes(Map.of("error", e.getMessage()));
        response.setStatus(HttpStatus.PAYLOAD_TOO_LARGE.value());
        response.setHeader("Connection", "close");
        response.setContentType("application/json");
        response.setContentLength(body.length); // a client reads the answer whole, whatever the connection does next
        response.getOutputStream().write(body);
        response.flushBuffer();
    }
}
