package dev.hexforge.onnx.export;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import dev.hexforge.onnx.lora.LoraInputs;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * {@code export.json}: what an export folder holds, so runtimes and later stages need not guess.
 *
 * @param graphs        role ("model" for dynamic; "prompt" and "token" for static) to path relative to the folder
 * @param promptLength  tokens per static prompt-graph run (0 for dynamic)
 * @param contextLength positions the static graphs attend over (0 for dynamic)
 * @param maskNegative  value a static caller puts in masked attention_mask entries
 * @param lookupBytes   bytes of the weights file only looked up, never read whole by a step: an untied model's token
 *                      embedding (a tied one is the LM head too, which every step reads)
 * @param logitsFrom    the dynamic graph's initializer holding the first position that gets logits, as a Slice start
 *                      (as stored: all), which a session that only generates sets to -1; null for static exports and
 *                      exports made before it
 * @param precision     what the graphs compute in, as AI Hub names it: w8a16, w4a16, w8a8 (every activation quantized),
 *                      w8, w4 (weights only), float; null for exports made before it
 * @param quantizedIo   the static graphs' inputs and outputs are in their quantized types (uint16 / uint8 at the
 *                      encodings {@link dev.hexforge.onnx.qdq.QuantizedIo#encodings} reads from each graph)
 * @param lora          the graphs' LoRA inputs and the export's adapters ({@link LoraInputs}); null when the graphs
 *                      take none
 */
public record ExportInfo(
        int formatVersion,
        Variant variant,
        int opset,
        Map<String, String> graphs,
        String weightsFile,
        int promptLength,
        int contextLength,
        float maskNegative,
        int numLayers,
        int numKvHeads,
        int headDim,
        int vocabSize,
        int maxPositionEmbeddings,
        List<Integer> eosTokenIds,
        String source,
        long lookupBytes,
        String logitsFrom,
        String hexforgeVersion,
        String precision,
        boolean quantizedIo,
        LoraInputs lora) {

    public static final String FILE = "export.json";
    public static final String HEXFORGE_VERSION = "0.1.0";
    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

    public Path graph(Path dir, String role) {
        String rel = graphs.get(role);
        if (rel == null) {
            throw new ExportException(dir + ": export has no '" + role + "' graph (variant " + variant + ")");
        }
        return dir.resolve(rel);
    }

    /**
     * The roles of one static graph kind ("prompt" or "token") in pipeline order: the graph itself, or its parts
     * {@code kind.0, kind.1...} when the export was split.
     */
    public List<String> roles(String kind) {
        if (graphs.containsKey(kind)) {
            return List.of(kind);
        }
        List<String> parts = new ArrayList<>();
        for (int p = 0; graphs.containsKey(kind + "." + p); p++) {
            parts.add(kind + "." + p);
        }
        if (parts.isEmpty()) {
            throw new ExportException("export has no '" + kind + "' graph (variant " + variant + ")");
        }
        return parts;
    }

    /**
     * Bytes of weights one decode step reads: the export's one weights file (every graph, and every part of a split
     * graph, reads its initializers from it; a tied embedding is stored once and read whole as the head), less an
     * untied embedding, of which a step reads one row.
     */
    public long weightBytes(Path dir) {
        try {
            return Files.size(dir.resolve(weightsFile)) - lookupBytes;
        } catch (IOException e) {
            throw new ExportException(dir + ": cannot read the weights file " + weightsFile + ": " + e.getMessage(), e);
        }
    }

    public void write(Path dir) throws IOException {
        JSON.writeValue(dir.resolve(FILE).toFile(), this);
    }

    public static boolean isExport(Path dir) {
        return Files.isRegularFile(dir.resolve(FILE));
    }

    public static ExportInfo read(Path dir) {
        Path f = dir.resolve(FILE);
        if (!Files.isRegularFile(f)) {
            throw new ExportException(dir + ": no " + FILE + " (not a Hexforge ONNX export)");
        }
        try {
            return JSON.readValue(f.toFile(), ExportInfo.class);
        } catch (IOException e) {
            throw new ExportException(f + ": unreadable: " + e.getMessage(), e);
        }
    }
}
