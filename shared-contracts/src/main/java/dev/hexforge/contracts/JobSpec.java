package dev.hexforge.contracts;

import com.fasterxml.jackson.annotation.JsonCreator;
import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;

import java.util.List;

/** A validated job spec (version 1) with every default filled in; see {@link JobSpecSchema} for each field. */
public record JobSpec(int schemaVersion, String name, Input model, boolean allowNonFinite, List<String> stages, Finetune finetune,
                      Quantize quantize, Export export, Compile compile, Sign sign, Benchmark benchmark) {

    /** An input: exactly one of an upload's id, an artifact's id (of the same tenant) or a server path under the input roots. */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record Input(String upload, String artifact, String path) {
        @JsonCreator(mode = JsonCreator.Mode.PROPERTIES)
        public Input(@JsonProperty("upload") String upload,
                     @JsonProperty("artifact") String artifact,
                     @JsonProperty("path") String path) {
            this.upload = upload;
            this.artifact = artifact;
            this.path = path;
        }

        /** Specs stored before inputs were objects name a path as a plain string. */
        @JsonCreator(mode = JsonCreator.Mode.DELEGATING)
        static Input fromString(String path) {
            return ofPath(path);
        }

        public static Input ofPath(String path) {
            return new Input(null, null, path);
        }

        public static Input ofUpload(String id) {
            return new Input(id, null, null);
        }

        /** How the input is named, for messages and provenance: "upload ID", "artifact ID" or the path. */
        public String describe() {
            return upload != null ? "upload " + upload : artifact != null ? "artifact " + artifact : path;
        }
    }

    public record Finetune(Input data, Input evalData, int r, double alpha, double dropout, List<String> targets,
                           int batch, int accumulation, double learningRate, int epochs, int maxLength, long seed,
                           String chatFormat) {
    }

    /**
     * @param group     null: {@link #defaultGroup}
     * @param symmetric null: {@link #defaultSymmetric}
     * @param head      int8, int4 or keep (float): how the token embedding and the LM head are stored
     */
    public record Quantize(String method, int bits, Integer group, Boolean symmetric, Input calibration,
                           int calibrationSamples, int calibrationLength, List<String> keep, String head, Auto auto,
                           String format, int accuracyLevel, int evalTokens, double maxDeltaPpl, String activations,
                           int kvBits, boolean quantizeIo) {
        /** 16-bit activations for a static export, float for a dynamic one. */
        public static final String DEFAULT_ACTIVATIONS = "auto";

        /** The token embedding and LM head: int8 per channel unless asked otherwise (specs stored before the field). */
        public static final String DEFAULT_HEAD = "int8";

        public static final int DEFAULT_EVAL_TOKENS = 1024;

        public String headOrDefault() {
            return head != null ? head : DEFAULT_HEAD;
        }

        /** Specs stored before the field hold 0. */
        public int evalTokensOrDefault() {
            return evalTokens > 0 ? evalTokens : DEFAULT_EVAL_TOKENS;
        }

        /** One scale per output channel at 8 bits, groups of 128 input columns below. */
        public static int defaultGroup(int bits) {
            return bits == 8 ? 0 : 128;
        }

        /** Symmetric at 8 bits per channel (the NPU's INT8 weights), with zero points otherwise. */
        public static boolean defaultSymmetric(int bits, int group) {
            return bits == 8 && group == 0;
        }

        public int groupOrDefault() {
            return group != null ? group : defaultGroup(bits);
        }

        public boolean symmetricOrDefault() {
            return symmetric != null ? symmetric : defaultSymmetric(bits, groupOrDefault());
        }
    }

    public record Auto(double maxExtraBytesPercent) {
    }

    /** @param maxGraphMb 0 in specs stored before it: the HTP's limit */
    public record Export(String variant, int opset, int seq, int ctx, int maxGraphMb) {
        public long maxGraphBytes() {
            return (long) (maxGraphMb == 0 ? NpuLimits.GRAPH_WEIGHT_MB : maxGraphMb) << 20;
        }
    }

    /** @param sampler null in specs stored before it: the declared defaults */
    public record Compile(String target, String soc, int htpArch, Sampler sampler) {
    }

    public record Sampler(long seed, double temperature, int topK, double topP) {
    }

    public record Sign(boolean provenance) {
    }

    public record Benchmark(String device, List<String> backends, int promptLength, int newTokens) {
    }

    public List<Stage> stageList() {
        return stages.stream().map(Stage::parse).toList();
    }
}
