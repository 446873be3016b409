package dev.hexforge.quant.calib;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.hexforge.quant.QuantizationException;
import dev.hexforge.tokenizer.ChatTemplate;
import dev.hexforge.tokenizer.Tokenizer;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.MalformedInputException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Random;

/**
 * Calibration token sequences from a JSONL file of {@code {"text": ...}} or chat {@code {"messages": [...]}} samples:
 * samples are shuffled with a seed, the first N taken, each tokenized and cut to L tokens. With fewer samples than
 * asked it warns and goes on, down to a floor of {@value #MIN_SAMPLES} samples.
 */
public record CalibrationSet(List<int[]> sequences, CoverageReport coverage, List<String> warnings) {
    public static final int MIN_SAMPLES = 8;
    private static final ObjectMapper JSON = new ObjectMapper();

    public long tokens() {
        return sequences.stream().mapToLong(s -> s.length).sum();
    }

    public static CalibrationSet load(Path file, Tokenizer tok, int samples, int length, long seed) {
        if (samples < 1 || length < 2) {
            throw new QuantizationException("calibration needs at least 1 sample of at least 2 tokens");
        }
        List<String> texts = new ArrayList<>();
        List<String> lines;
        try {
            lines = Files.readAllLines(file);
        } catch (MalformedInputException e) {
            throw new QuantizationException(file + " is not UTF-8 text");
        } catch (IOException e) {
            throw new UncheckedIOException("reading " + file + ": " + e.getMessage(), e);
        }
        ChatTemplate template = tok.chatTemplate();
        for (int i = 0; i < lines.size(); i++) {
            String line = lines.get(i).strip();
            if (line.isEmpty()) {
                continue;
            }
            texts.add(sampleText(file, i + 1, line, template));
        }
        if (texts.isEmpty()) {
            throw new QuantizationException(file + ": the calibration file has no samples");
        }
        Collections.shuffle(texts, new Random(seed));
        List<String> warnings = new ArrayList<>();
        if (texts.size() < samples) {
            if (texts.size() < MIN_SAMPLES) {
                throw new QuantizationException(file + ": " + texts.size() + " calibration samples, fewer than the floor of "
                        + MIN_SAMPLES + "; add samples");
            }
            warnings.add("asked for " + samples + " calibration samples, the file has " + texts.size() + "; using them all");
        }
        List<String> used = texts.subList(0, Math.min(samples, texts.size()));
        List<int[]> seqs = new ArrayList<>();
        for (String t : used) {
            int[] ids = tok.encode(t);
            if (ids.length >= 2) {
                seqs.add(ids.length > length ? Arrays.copyOf(ids, length) : ids);
            }
        }
        CoverageReport coverage = CoverageReport.of(used, seqs);
        warnings.addAll(coverage.warnings());
        return new CalibrationSet(List.copyOf(seqs), coverage, List.copyOf(warnings));
    }

    private static String sampleText(Path file, int lineNo, String line, ChatTemplate template) {
        JsonNode n;
        try {
            n = JSON.readTree(line);
        } catch (JsonProcessingException e) {
            throw new QuantizationException(file + " line " + lineNo + ": not valid JSON (" + e.getOriginalMessage() + ")");
        }
        if (n.path("text").isTextual()) {
            return n.get("text").asText();
        }
        if (n.path("messages").isArray()) {
            List<ChatTemplate.Message> msgs = new ArrayList<>();
            for (JsonNode m : n.get("messages")) {
                if (!m.path("role").isTextual() || !m.path("content").isTextual()) {
                    throw new QuantizationException(file + " line " + lineNo + ": every message needs a string role and content");
                }
                msgs.add(new ChatTemplate.Message(m.get("role").asText(), m.get("content").asText()));
            }
            return template.render(msgs, false);
        }
        throw new QuantizationException(file + " line " + lineNo + ": expected {\"text\": ...} or {\"messages\": [...]}");
    }
}
