package dev.hexforge.cli;

import com.fasterxml.jackson.databind.JsonNode;
import dev.hexforge.client.GatewayClient;
import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;

import java.util.concurrent.Callable;

/** Device runners of the caller's tenant: add one (its token is printed once) and list them. */
@Command(name = "device", mixinStandardHelpOptions = true, description = {"Add and list device runners.",
        "The runner itself: bin/hexforge device serve | bench | run | phones (see bin/hexforge device serve --help)."},
        subcommands = {DeviceCommands.Add.class, DeviceCommands.ListDevices.class})
final class DeviceCommands implements Runnable {
    @Override
    public void run() {
        new picocli.CommandLine(this).usage(System.out);
    }

    @Command(name = "add", mixinStandardHelpOptions = true,
            description = "Add a device; prints the token its runner needs (HEXFORGE_DEVICE_TOKEN), once.")
    static final class Add implements Callable<Integer> {
        @Parameters(index = "0", description = "device name")
        String name;

        @Override
        public Integer call() {
            GatewayClient client = GatewayClient.fromEnvironment();
            JsonNode d = client.ok(client.send("POST", "/api/v1/devices", Json.MAPPER.createObjectNode().put("name", name).toString(),
                    "application/json"));
            System.out.println(d.path("token").asText());
            System.err.println("device " + name + ": on the device run HEXFORGE_URL=... HEXFORGE_DEVICE_TOKEN=<the token above> "
                    + "hexforge-device-runner serve");
            return 0;
        }
    }

    @Command(name = "list", mixinStandardHelpOptions = true, description = "Devices with their backends and state.")
    static final class ListDevices implements Callable<Integer> {
        @Override
        public Integer call() {
            GatewayClient client = GatewayClient.fromEnvironment();
            for (JsonNode d : client.ok(client.send("GET", "/api/v1/devices", null, null)).path("devices")) {
                System.out.printf("%-20s %-8s backends %s  last seen %s%s%n", d.path("name").asText(),
                        d.path("online").asBoolean() ? "online" : "offline", d.path("info").path("backends"),
                        d.path("lastSeen").asText("never"), d.path("currentTask").isNull() ? "" : "  running " + d.path("currentTask").asText());
            }
            return 0;
        }
    }
}
