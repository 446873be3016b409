package dev.hexforge.standalone;

import dev.hexforge.artifactservice.ArtifactServiceApplication;
import dev.hexforge.client.GatewayClient;
import dev.hexforge.compileservice.CompileServiceApplication;
import dev.hexforge.exportservice.ExportServiceApplication;
import dev.hexforge.finetuneservice.FinetuneServiceApplication;
import dev.hexforge.gateway.GatewayApplication;
import dev.hexforge.infra.EmbeddedInfra;
import dev.hexforge.quantizeservice.QuantizeServiceApplication;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * The Hexforge services a deployment file runs, each a process of its own with the jib image's main class and JVM
 * flags and exactly the environment the file gives its container (the file's hosts mapped to servers on this machine,
 * its volumes to folders). A service can be killed with SIGKILL and started again with the same environment and
 * folders, as its orchestrator restarts a container; each one's output goes to {@code dir/SERVICE.log}, appended to
 * across restarts. A service that exits on its own is started again a second later, as compose's {@code restart:
 * unless-stopped} and Kubernetes do (a service refuses to start while the object store is away, for one); those
 * restarts are counted for the tests to look at.
 */
final class ProcessFleet implements AutoCloseable {
    /** The main class jib finds in each service image (the module's one Spring Boot application). */
    static final Map<String, Class<?>> MAIN = Map.of(
            "gateway", GatewayApplication.class,
            "artifact-service", ArtifactServiceApplication.class,
            "export-service", ExportServiceApplication.class,
            "quantize-service", QuantizeServiceApplication.class,
            "finetune-service", FinetuneServiceApplication.class,
            "compile-service", CompileServiceApplication.class);

    /** A service as a file describes its container: its environment, and where each container path lives here. */
    record Container(String service, Map<String, String> env, Map<String, Path> mounts) {
    }

    /** How a process is started: its main class, arguments and whole environment. */
    record Launch(Class<?> main, List<String> args, Map<String, String> env) {
    }

    private final Path dir;
    private final Map<String, Launch> launches = new LinkedHashMap<>();
    private final Map<String, Process> running = new LinkedHashMap<>();
    /** Services being killed and started again by a test: the restart policy leaves them alone. */
    private final java.util.Set<String> killed = new java.util.HashSet<>();
    private final List<String> restartedByPolicy = new ArrayList<>();
    private volatile boolean closing;
    final int gatewayPort = EmbeddedInfra.Ports.restartable();
    final int artifactPort = EmbeddedInfra.Ports.restartable();
    private final Path tokenFile;

    /**
     * Starts every container. {@code infraHosts} maps the file's addresses of Kafka, PostgreSQL and S3 to where they run
     * here; {@code extra} is added to every service's environment (test settings the files leave at their defaults).
     */
    ProcessFleet(Path dir, List<Container> containers, Map<String, String> infraHosts, Map<String, String> extra) throws IOException {
        this.dir = dir;
        // a test JVM stopped before close() (a benchmark run interrupted) leaves no service running on its own
        Runtime.getRuntime().addShutdownHook(new Thread(() -> ProcessHandle.current().descendants().forEach(ProcessHandle::destroyForcibly),
                "process-fleet-reaper"));
        assertEquals(MAIN.keySet(), containers.stream().map(Container::service).collect(java.util.stream.Collectors.toSet()),
                "the file runs every service image");
        Map<String, String> hosts = new LinkedHashMap<>(infraHosts); // the file's service addresses -> where they run here
        hosts.put("http://artifact-service:8081", "http://127.0.0.1:" + artifactPort);
        Path token = null;
        for (Container c : containers) {
            Map<String, String> env = new LinkedHashMap<>();
            for (var v : c.env().entrySet()) {
                String value = hosts.getOrDefault(v.getValue(), v.getValue());
                if (value.startsWith("/")) {
                    value = hostPath(c, value).toString();
                }
                for (String host : List.of("kafka", "minio", "postgres", ".svc", "artifact-service:")) {
                    assertTrue(!value.contains(host + ":") && !value.contains(host + "/") && !value.contains(host + "."),
                            c.service() + "'s " + v.getKey() + " names a host this test does not map: " + value);
                }
                env.put(v.getKey(), value);
            }
            // the ports the containers listen on (published or a Service in front; here each process needs a free one)
            env.put("HEXFORGE_GATEWAY_PORT", String.valueOf(gatewayPort));
            env.put("HEXFORGE_ARTIFACT_PORT", String.valueOf(artifactPort));
            env.putAll(extra);
            if (c.service().equals("gateway")) {
                token = Path.of(env.get("HEXFORGE_BOOTSTRAPTOKENFILE"));
            }
            launches.put(c.service(), new Launch(MAIN.get(c.service()), List.of(), env));
        }
        assertTrue(token != null, "the gateway is told where to write the first API token");
        this.tokenFile = token;
        for (String service : List.copyOf(launches.keySet())) {
            start(service);
        }
        Thread policy = new Thread(this::restartWhatExits, "restart-policy");
        policy.setDaemon(true);
        policy.start();
    }

    /** Another process of the deployment (a device runner, say), started now and handled like the services from then on. */
    synchronized void add(String name, Launch launch) throws IOException {
        launches.put(name, launch);
        start(name);
    }

    private void restartWhatExits() {
        while (!closing) {
            try {
                Thread.sleep(1_000);
                synchronized (this) {
                    for (var e : running.entrySet()) {
                        if (!closing && !e.getValue().isAlive() && !killed.contains(e.getKey())) {
                            restartedByPolicy.add(e.getKey() + " (exit code " + e.getValue().exitValue() + ")");
                            start(e.getKey());
                        }
                    }
                }
            } catch (InterruptedException | IOException | RuntimeException e) {
                return;
            }
        }
    }

    /** The services the restart policy started again since the last call (each with its exit code). */
    synchronized List<String> restartedByPolicy() {
        List<String> out = List.copyOf(restartedByPolicy);
        restartedByPolicy.clear();
        return out;
    }


    /** Starts the service (again) as its container runs it: the image's JVM flags and main class, nothing but its environment. */
    synchronized void start(String service) throws IOException {
        assertTrue(!running.containsKey(service) || !running.get(service).isAlive(), service + " runs already");
        killed.remove(service);
        // the class path goes in an argument file, as a jib image's command line is short: with this test's 30 kB class
        // path on the command line, ONNX Runtime's start-up overflowed a 1 MB thread stack (a silent SIGSEGV)
        Path classPath = dir.resolve("classpath.args");
        if (!Files.exists(classPath)) {
            Files.writeString(classPath, "-cp \"" + System.getProperty("java.class.path").replace("\\", "\\\\") + "\"\n");
        }
        List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--add-modules", "jdk.incubator.vector", "-XX:+UseParallelGC",
                "-Xmx512m", // six JVMs share this machine (a container's default is a quarter of its memory)
                "@" + classPath, launches.get(service).main().getName()));
        cmd.addAll(launches.get(service).args());
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(dir.resolve(service + ".log").toFile()));
        pb.environment().keySet().retainAll(List.of("PATH"));
        pb.environment().putAll(launches.get(service).env());
        pb.directory(folder(service + "-cwd").toFile());
        running.put(service, pb.start());
    }

    /** SIGKILL, as {@code kill -9} or an OOM killer does it: no shutdown hook runs, nothing is flushed or committed. */
    void kill(String service) throws InterruptedException {
        Process p;
        synchronized (this) {
            killed.add(service);
            p = running.get(service);
        }
        p.destroyForcibly();
        assertTrue(p.waitFor(30, TimeUnit.SECONDS), service + " did not die");
        assertEquals(137, p.exitValue(), service + " was killed by SIGKILL");
    }

    /** The gateway answering its health check, with the admin token it wrote at its first start. */
    GatewayClient awaitGateway(Duration within) throws Exception {
        long deadline = System.nanoTime() + within.toNanos();
        while (!Files.isRegularFile(tokenFile) || Files.size(tokenFile) == 0 || !healthy(gatewayPort)) {
            if (System.nanoTime() > deadline) {
                fail("the gateway did not come up: " + logs());
            }
            assertAllAlive();
            Thread.sleep(300);
        }
        return new GatewayClient("http://127.0.0.1:" + gatewayPort, Files.readString(tokenFile).strip());
    }

    /** For tests that run the files' services without faults: none of them may exit (the policy would hide it). */
    synchronized void assertAllAlive() {
        assertTrue(restartedByPolicy.isEmpty(), () -> "services exited and were started again: " + restartedByPolicy + "\n" + logs());
        running.forEach((service, p) -> assertTrue(p.isAlive(), () -> service + " exited (PID " + p.pid() + ", exit code "
                + p.exitValue() + ")\n" + logs()));
    }

    /** The last part of each service's log. */
    String logs() {
        StringBuilder sb = new StringBuilder();
        for (String service : launches.keySet()) {
            try {
                String s = Files.readString(dir.resolve(service + ".log"));
                sb.append("--- ").append(service).append(" ---\n").append(s.substring(Math.max(0, s.length() - 8000))).append('\n');
            } catch (IOException e) {
                sb.append("--- ").append(service).append(": no log\n");
            }
        }
        return sb.toString();
    }

    @Override
    public void close() throws InterruptedException {
        closing = true;
        for (Process p : running.values()) {
            p.destroy();
        }
        for (Process p : running.values()) {
            if (!p.waitFor(20, TimeUnit.SECONDS)) {
                p.destroyForcibly().waitFor();
            }
        }
    }

    /** A path in the container: under one of its mounts (the longest that fits), else in its own filesystem. */
    private Path hostPath(Container c, String path) throws IOException {
        var mount = c.mounts().entrySet().stream()
                .filter(m -> path.equals(m.getKey()) || path.startsWith(m.getKey() + "/"))
                .max(Comparator.comparingInt(m -> m.getKey().length()));
        if (mount.isPresent()) {
            String rest = path.substring(mount.get().getKey().length());
            return rest.isEmpty() ? mount.get().getValue() : Path.of(mount.get().getValue() + rest);
        }
        Path own = folder(c.service() + "-filesystem").resolve(path.substring(1));
        Files.createDirectories(own.getParent());
        return own;
    }

    private Path folder(String name) {
        return folder(dir, name);
    }

    static Path folder(Path dir, String name) {
        try {
            return Files.createDirectories(dir.resolve(name));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * A free port below the kernel's ephemeral range (32768 and up on Linux) for a server that is stopped and started
     * again: while it is down, a client connecting to a port in that range can be given the same port as its own end
     * and connect to itself (TCP simultaneous open), holding the port so the server cannot listen there again.
     */
    static boolean healthy(int port) {
        try {
            return HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/api/v1/health")).build(),
                    HttpResponse.BodyHandlers.discarding()).statusCode() == 200;
        } catch (Exception e) {
            return false;
        }
    }
}
