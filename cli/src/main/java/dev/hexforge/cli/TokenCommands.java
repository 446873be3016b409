package dev.hexforge.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.hexforge.client.GatewayClient;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.util.concurrent.Callable;

/** API tokens on a running fleet: create (for a new tenant with an admin token), list, revoke. */
@Command(name = "token", mixinStandardHelpOptions = true, description = "Create, list and revoke API tokens.",
        subcommands = {TokenCommands.Create.class, TokenCommands.ListTokens.class, TokenCommands.Revoke.class})
final class TokenCommands implements Runnable {
    @Override
    public void run() {
        new picocli.CommandLine(this).usage(System.out);
    }

    @Command(name = "create", mixinStandardHelpOptions = true,
            description = "Create a token (printed once). Another tenant's needs an admin token, e.g. the bootstrap one.")
    static final class Create implements Callable<Integer> {
        @Option(names = "--tenant", description = "tenant of the new token (default: the caller's)")
        String tenant;
        @Option(names = "--name", defaultValue = "token", description = "what the token is for (default ${DEFAULT-VALUE})")
        String name;
        @Option(names = "--json")
        boolean json;

        @Override
        public Integer call() {
            GatewayClient client = GatewayClient.fromEnvironment();
            ObjectNode body = Json.MAPPER.createObjectNode().put("name", name);
            if (tenant != null) {
                body.put("tenant", tenant);
            }
            JsonNode t = client.ok(client.send("POST", "/api/v1/tokens", body.toString(), "application/json"));
            if (json) {
                System.out.println(t.toString());
            } else {
                System.out.println(t.path("token").asText());
                System.err.println("token for tenant " + t.path("tenant").asText() + " (" + t.path("name").asText()
                        + "): store it now, it is not shown again; use it as HEXFORGE_TOKEN");
            }
            return 0;
        }
    }

    @Command(name = "list", mixinStandardHelpOptions = true, description = "The tokens this token may manage (no secrets).")
    static final class ListTokens implements Callable<Integer> {
        @Override
        public Integer call() {
            GatewayClient client = GatewayClient.fromEnvironment();
            for (JsonNode t : client.ok(client.send("GET", "/api/v1/tokens", null, null)).path("tokens")) {
                System.out.printf("%s  %-20s %-20s %s%s%n", t.path("id").asText(), t.path("tenant").asText(), t.path("name").asText(),
                        t.path("createdAt").asText(), t.path("revokedAt").isNull() ? (t.path("admin").asBoolean() ? "  admin" : "")
                                : "  revoked " + t.path("revokedAt").asText());
            }
            return 0;
        }
    }

    @Command(name = "revoke", mixinStandardHelpOptions = true, description = "Revoke a token by its id (from `token list`).")
    static final class Revoke implements Callable<Integer> {
        @Parameters(index = "0")
        String id;

        @Override
        public Integer call() {
            GatewayClient client = GatewayClient.fromEnvironment();
            client.ok(client.send("DELETE", "/api/v1/tokens/" + id, null, null));
            System.out.println("revoked " + id);
            return 0;
        }
    }
}
