package dev.hexforge.client;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.ConnectException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.function.BiConsumer;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * The gateway's REST API as the CLI, the demo and the device-runner use it. Where: {@code HEXFORGE_URL} (or -Dhexforge.url; default the standalone
 * fleet at http://127.0.0.1:8080); who: {@code HEXFORGE_TOKEN} (or -Dhexforge.token), else the standalone bootstrap
 * token in {@code ~/.hexforge/secrets/api-token}.
 */
public final class GatewayClient {
    private static final ObjectMapper JSON = new ObjectMapper();
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private final String base;
    private final String token;

    public record Reply(int status, JsonNode body) {
    }

    /**
     * The gateway refused a request ({@link #status()} its HTTP status) or could not be reached (status 0). An
     * IllegalArgumentException, as every client error here is, so a command prints its message.
     */
    public static final class GatewayException extends IllegalArgumentException {
        private final int status;

        GatewayException(int status, String message, Throwable cause) {
            super(message, cause);
            this.status = status;
        }

        /** The HTTP status, or 0 when no answer came. */
        public int status() {
            return status;
        }

        /** Not reachable, or answering 502/503/504: the same request may well succeed in a few seconds. */
        public boolean worthRetrying() {
            return status == 0 || status == 502 || status == 503 || status == 504;
        }
    }

    public GatewayClient(String base, String token) {
        this.base = base.endsWith("/") ? base.substring(0, base.length() - 1) : base;
        this.token = token;
    }

    /**
     * The standalone fleet's state folder: {@code $HEXFORGE_STATE}, else {@code $HOME/.hexforge}. {@code $HOME}, not
     * Java's {@code user.home} (the account's home from the password database), so {@code HOME=/x hexforge ...}
     * keeps its state under {@code /x} as a user expects.
     */
    public static Path stateFolder() {
        String state = System.getenv("HEXFORGE_STATE");
        if (state != null && !state.isBlank()) {
            return Path.of(state);
        }
        String home = System.getenv("HOME");
        return Path.of(home != null && !home.isBlank() ? home : System.getProperty("user.home"), ".hexforge");
    }

    public static GatewayClient fromEnvironment() {
        String url = setting("hexforge.url", "HEXFORGE_URL", "http://127.0.0.1:8080");
        String token = setting("hexforge.token", "HEXFORGE_TOKEN", null);
        if (token == null) {
            Path file = stateFolder().resolve("secrets").resolve("api-token");
            try {
                token = Files.isRegularFile(file) ? Files.readString(file).strip() : null;
            } catch (IOException e) {
                token = null;
            }
        }
        if (token == null) {
            throw new IllegalArgumentException("no API token: set HEXFORGE_TOKEN (the standalone fleet writes one to ~/.hexforge/secrets/api-token)");
        }
        return new GatewayClient(url, token);
    }

    public String base() {
        return base;
    }

    String token() {
        return token;
    }

    /** A system property, else an environment variable, else the default. */
    private static String setting(String property, String env, String def) {
        String v = System.getProperty(property);
        if (v == null) {
            v = System.getenv(env);
        }
        return v != null ? v : def;
    }

    public Reply send(String method, String path, String body, String contentType) {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(base + path)).timeout(Duration.ofSeconds(60))
                .header("Authorization", "Bearer " + token);
        if (body != null) {
            b.header("Content-Type", contentType).method(method, HttpRequest.BodyPublishers.ofString(body));
        } else {
            b.method(method, HttpRequest.BodyPublishers.noBody());
        }
        try {
            HttpResponse<String> r = http.send(b.build(), HttpResponse.BodyHandlers.ofString());
            return new Reply(r.statusCode(), r.body().isBlank() ? JSON.createObjectNode() : JSON.readTree(r.body()));
        } catch (ConnectException e) {
            throw notReachable(e);
        } catch (IOException e) {
            throw new GatewayException(0, "talking to " + base + ": " + e.getMessage(), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }

    /**
     * Reads a server-sent event stream until the server ends it, handing each event's name and data to the
     * consumer. A connection that breaks just ends the call; the caller decides whether to reconnect.
     */
    public void events(String path, BiConsumer<String, String> onEvent) {
        HttpRequest req = HttpRequest.newBuilder(URI.create(base + path)).header("Authorization", "Bearer " + token)
                .header("Accept", "text/event-stream").build();
        try {
            HttpResponse<Stream<String>> r = http.send(req, HttpResponse.BodyHandlers.ofLines());
            if (r.statusCode() != 200) {
                String body = r.body().collect(Collectors.joining("\n"));
                ok(new Reply(r.statusCode(), body.isBlank() ? JSON.createObjectNode() : JSON.readTree(body)));
            }
            String[] name = {"message"};
            StringBuilder data = new StringBuilder();
            r.body().forEach(line -> {
                if (line.isEmpty()) {
                    if (data.length() > 0) {
                        onEvent.accept(name[0], data.toString());
                    }
                    name[0] = "message";
                    data.setLength(0);
                } else if (line.startsWith("event:")) {
                    name[0] = line.substring(6).strip();
                } else if (line.startsWith("data:")) {
                    data.append(data.length() > 0 ? "\n" : "").append(line.substring(5).strip());
                }
            });
            if (data.length() > 0) {
                onEvent.accept(name[0], data.toString());
            }
        } catch (ConnectException e) {
            throw notReachable(e);
        } catch (IOException | UncheckedIOException e) {
            // the stream broke: the caller looks at the job and reconnects if it still runs
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }

    /** Streams a body of unknown length to {@code POST /api/v1/uploads?name=...} (chunked; nothing held whole). */
    public Reply upload(String name, Supplier<InputStream> body) {
        HttpRequest req = HttpRequest.newBuilder(URI.create(base + "/api/v1/uploads?name="
                        + URLEncoder.encode(name, StandardCharsets.UTF_8)))
                .header("Authorization", "Bearer " + token).header("Content-Type", "application/octet-stream")
                .POST(HttpRequest.BodyPublishers.ofInputStream(body)).build();
        try {
            HttpResponse<String> r = http.send(req, HttpResponse.BodyHandlers.ofString());
            return new Reply(r.statusCode(), r.body().isBlank() ? JSON.createObjectNode() : JSON.readTree(r.body()));
        } catch (ConnectException e) {
            throw notReachable(e);
        } catch (IOException e) {
            throw new GatewayException(0, "uploading to " + base + ": " + e.getMessage(), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }

    /** The body of a 2xx reply; anything else becomes an error naming what the gateway said. */
    public JsonNode ok(Reply r) {
        if (r.status() / 100 == 2) {
            return r.body();
        }
        StringBuilder msg = new StringBuilder("gateway answered " + r.status());
        if (r.body().has("error")) {
            msg.append(": ").append(r.body().path("error").asText());
        }
        for (JsonNode p : r.body().path("problems")) {
            msg.append("\n  ").append(p.path("path").asText()).append(": ").append(p.path("message").asText());
        }
        throw new GatewayException(r.status(), msg.toString(), null);
    }

    private GatewayException notReachable(ConnectException e) {
        return new GatewayException(0, "the gateway at " + base + " is not reachable: start it with `hexforge up` or set HEXFORGE_URL", e);
    }
}
