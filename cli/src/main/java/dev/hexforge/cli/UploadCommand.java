package dev.hexforge.cli;

import com.fasterxml.jackson.databind.JsonNode;
import dev.hexforge.client.GatewayClient;
import dev.hexforge.io.ModelArchive;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.io.IOException;
import java.io.InputStream;
import java.io.PipedInputStream;
import java.io.PipedOutputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.function.Supplier;

@Command(name = "upload", mixinStandardHelpOptions = true,
        description = "Upload a model or a data file to the fleet: a Hugging Face folder (packed as tar.gz on the fly), a "
                + "zip/tar/tar.gz archive, or training, evaluation or calibration data (.json, .jsonl, .txt). Prints the upload id "
                + "to use as `model: {upload: ID}` or `finetune: {data: {upload: ID}}` in a job spec.")
final class UploadCommand implements Callable<Integer> {
    @Parameters(index = "0", description = "model folder, archive, or data file")
    Path path;
    @Option(names = "--name", description = "name shown for the upload (default: the folder or file name)")
    String name;
    @Option(names = "--json", description = "print the upload as JSON")
    boolean json;

    @Override
    public Integer call() {
        if (!Files.exists(path)) {
            throw new IllegalArgumentException(path + " does not exist");
        }
        boolean folder = Files.isDirectory(path);
        String shown = name != null ? name : path.toAbsolutePath().normalize().getFileName() + (folder ? ".tar.gz" : "");
        Supplier<InputStream> body = folder ? () -> packed(path) : () -> {
            try {
                return Files.newInputStream(path);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        };
        GatewayClient client = GatewayClient.fromEnvironment();
        JsonNode u = client.ok(client.upload(shown, body));
        if (json) {
            System.out.println(u.toPrettyString());
        } else {
            boolean data = List.of("json", "jsonl", "text").contains(u.path("format").asText());
            System.out.printf("uploaded %s: %d bytes, %d files, sha256 %s%nupload id %s (in a job spec: %s: {upload: %s})%n",
                    u.path("name").asText(), u.path("size").asLong(), u.path("files").asInt(), u.path("sha256").asText(),
                    u.path("id").asText(), data ? "finetune.data, finetune.evalData or quantize.calibration" : "model", u.path("id").asText());
        }
        return 0;
    }

    /** The folder as a tar.gz stream, packed by a thread as the upload reads it. */
    private static InputStream packed(Path dir) {
        try {
            PipedInputStream in = new PipedInputStream(1 << 20);
            PipedOutputStream out = new PipedOutputStream(in);
            Thread packer = new Thread(() -> {
                try (out) {
                    ModelArchive.pack(dir, out);
                } catch (IOException | ModelArchive.ArchiveException e) {
                    System.err.println("hexforge: packing " + dir + " failed: " + e.getMessage());
                }
            }, "hexforge-pack");
            packer.setDaemon(true);
            packer.start();
            return in;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
