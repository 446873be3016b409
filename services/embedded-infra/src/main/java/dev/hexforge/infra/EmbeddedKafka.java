package dev.hexforge.infra;

import kafka.server.KafkaConfig;
import kafka.server.KafkaRaftServer;
import kafka.tools.StorageTool;
import org.apache.kafka.common.utils.Time;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Properties;

/**
 * A single-node Kafka (KRaft, broker and controller in one) on fixed ports, with its log under {@code dir} so topics
 * and offsets survive restarts. The storage is formatted on first start.
 */
public final class EmbeddedKafka implements AutoCloseable {
    private final KafkaRaftServer server;
    private final int port;

    private EmbeddedKafka(KafkaRaftServer server, int port) {
        this.server = server;
        this.port = port;
    }

    public static EmbeddedKafka start(Path dir, int port, int controllerPort) {
        try {
            Path logs = Files.createDirectories(dir.resolve("logs"));
            Properties p = new Properties();
            p.setProperty("process.roles", "broker,controller");
            p.setProperty("node.id", "1");
            p.setProperty("controller.quorum.voters", "1@127.0.0.1:" + controllerPort);
            p.setProperty("listeners", "PLAINTEXT://127.0.0.1:" + port + ",CONTROLLER://127.0.0.1:" + controllerPort);
            p.setProperty("advertised.listeners", "PLAINTEXT://127.0.0.1:" + port);
            p.setProperty("controller.listener.names", "CONTROLLER");
            p.setProperty("inter.broker.listener.name", "PLAINTEXT");
            p.setProperty("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT");
            p.setProperty("log.dirs", logs.toString());
            p.setProperty("num.partitions", "4");
            p.setProperty("auto.create.topics.enable", "true");
            p.setProperty("offsets.topic.replication.factor", "1");
            p.setProperty("offsets.topic.num.partitions", "4");
            p.setProperty("transaction.state.log.replication.factor", "1");
            p.setProperty("transaction.state.log.min.isr", "1");
            p.setProperty("share.coordinator.state.topic.replication.factor", "1");
            p.setProperty("share.coordinator.state.topic.min.isr", "1");
            p.setProperty("group.initial.rebalance.delay.ms", "0");
            Path config = dir.resolve("server.properties");
            try (Writer w = Files.newBufferedWriter(config)) {
                p.store(w, "written by hexforge");
            }
            if (!Files.exists(logs.resolve("meta.properties"))) {
                ByteArrayOutputStream out = new ByteArrayOutputStream();
                int rc = StorageTool.execute(new String[]{"format", "-t", "hexforge-standalone-0000", "-c", config.toString(),
                        "--ignore-formatted"}, new PrintStream(out, true, StandardCharsets.UTF_8));
                if (rc != 0) {
                    throw new IllegalStateException("formatting Kafka storage failed: " + out.toString(StandardCharsets.UTF_8));
                }
            }
            KafkaRaftServer server = new KafkaRaftServer(KafkaConfig.fromProps(p, false), Time.SYSTEM);
            server.startup();
            return new EmbeddedKafka(server, port);
        } catch (IOException e) {
            throw new UncheckedIOException("starting Kafka in " + dir + ": " + e.getMessage(), e);
        }
    }

    public String bootstrapServers() {
        return "127.0.0.1:" + port;
    }

    @Override
    public void close() {
        server.shutdown();
        server.awaitShutdown();
    }
}
