package dev.hexforge.gateway.artifact;

import com.fasterxml.jackson.core.type.TypeReference;
import dev.hexforge.contracts.ContractsJson;
import dev.hexforge.gateway.config.GatewayProperties;
import org.springframework.core.ParameterizedTypeReference;
import org.springframework.http.HttpStatusCode;
import org.springframework.stereotype.Component;
import org.springframework.web.client.HttpStatusCodeException;
import org.springframework.web.client.ResourceAccessException;
import org.springframework.web.client.RestClient;
import org.springframework.web.util.UriBuilder;

import java.net.URI;
import java.util.Map;
import java.util.function.Function;

/** Calls the artifact service's internal API, naming the caller's tenant and sending the shared internal secret. */
@Component
public class ArtifactServiceClient {
    private final RestClient http;
    private final String base;

    /** The artifact service answered with an error (passed on as it is) or could not be reached (503). */
    public static final class ArtifactServiceException extends RuntimeException {
        public final int status;
        final Map<String, Object> body;

        ArtifactServiceException(int status, Map<String, Object> body) {
            super(String.valueOf(body.get("error")));
            this.status = status;
            this.body = body;
        }
    }

    ArtifactServiceClient(GatewayProperties settings) {
        this.base = settings.artifactService().url();
        this.http = RestClient.builder().baseUrl(base).defaultHeader("X-Hexforge-Internal", settings.internalToken()).build();
    }

    public Map<String, Object> get(Function<UriBuilder, URI> uri) {
        try {
            return http.get().uri(uri).retrieve().body(new ParameterizedTypeReference<Map<String, Object>>() { });
        } catch (HttpStatusCodeException e) {
            throw new ArtifactServiceException(e.getStatusCode().value(), errorBody(e.getStatusCode(), e.getResponseBodyAsString()));
        } catch (ResourceAccessException e) {
            throw new ArtifactServiceException(503, Map.of("error", "the artifact service at " + base + " is not reachable: "
                    + e.getMessage()));
        }
    }

    private static Map<String, Object> errorBody(HttpStatusCode status, String body) {
        try {
            return ContractsJson.MAPPER.readValue(body, new TypeReference<Map<String, Object>>() { });
        } catch (Exception e) {
            return Map.of("error", "artifact service answered " + status.value());
        }
    }
}
