package dev.hexforge.quant.gate;

import dev.hexforge.quant.QuantizationException;
import dev.hexforge.tokenizer.Tokenizer;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.MalformedInputException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;
import java.util.HexFormat;

/**
 * The tokens the accuracy gate scores: the evaluation text's first whole windows, at most {@code maxTokens} tokens
 * (at least one window).
 */
public record GateText(int[] ids, int window) {

    public static GateText of(Path text, Tokenizer tok, int window, int maxTokens, int maxContext) {
        int w = Math.min(window, maxContext);
        if (w < 2) {
            throw new QuantizationException("the evaluation window must be at least 2 tokens, got " + window);
        }
        int[] all = tok.encode(read(text));
        int windows = Math.min(all.length / w, Math.max(1, maxTokens / w));
        if (windows == 0) {
            throw new QuantizationException(text + ": the evaluation text has " + all.length + " tokens, fewer than one window of " + w);
        }
        return new GateText(Arrays.copyOf(all, windows * w), w);
    }

    private static String read(Path p) {
        try {
            String s = Files.readString(p);
            if (s.isBlank()) {
                throw new QuantizationException(p + ": the evaluation text is empty");
            }
            return s;
        } catch (MalformedInputException e) {
            throw new QuantizationException(p + " is not valid UTF-8 text");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** What identifies these windows in the baseline cache. */
    public String digest() {
        try {
            MessageDigest md = MessageDigest.getInstance("SHA-256");
            md.update(("window=" + window + ";").getBytes());
            for (int id : ids) {
                md.update(new byte[]{(byte) (id >>> 24), (byte) (id >>> 16), (byte) (id >>> 8), (byte) id});
            }
            return HexFormat.of().formatHex(md.digest());
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
