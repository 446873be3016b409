package dev.hexforge.quant.gate;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.hexforge.checkpoint.Checkpoint;
import dev.hexforge.checkpoint.ModelDigest;
import dev.hexforge.concurrent.Background;
import dev.hexforge.eval.Perplexity;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * The float model's scores on the gate's windows, computed once per model and text: kept in
 * {@code CACHE/gate-baseline/<digest>.json}, keyed by the SHA-256 of the checkpoint's config and weight files and of
 * the scored tokens. Scored by layer from the checkpoint ({@link FloatScoring}), so a model of any size needs one
 * layer's weights in memory.
 */
public final class FloatBaseline {
    private static final ObjectMapper JSON = new ObjectMapper();

    record Cached(double perplexity, double meanNll, long scoredTokens, int windows, int droppedTrailingTokens, int[] top1) {
    }

    private final Checkpoint ckpt;
    private final GateText text;
    private final Path cache;
    private final Background<String> key;

    private FloatBaseline(Checkpoint ckpt, GateText text, Path cache, Background<String> key) {
        this.ckpt = ckpt;
        this.text = text;
        this.cache = cache;
        this.key = key;
    }

    /** @param cache the cache folder, or null to compute every time */
    public static Perplexity.Scored of(Checkpoint ckpt, GateText text, Path cache) {
        // hashing a model's files takes about a second a gigabyte: it runs beside the lookup's other work
        return new FloatBaseline(ckpt, text, cache, cache == null ? Background.done(null)
                : Background.start("hexforge-baseline-digest", () -> key(ModelDigest.of(ckpt.dir()), text))).scores();
    }

    /**
     * Starts looking the baseline up in {@code cache} (null: none) for the model whose {@link ModelDigest} the
     * caller has; {@link #scores} gives it.
     */
    public static FloatBaseline start(Checkpoint ckpt, GateText text, Path cache, String modelDigest) {
        return new FloatBaseline(ckpt, text, cache, Background.done(cache == null ? null : key(modelDigest, text)));
    }

    /** The float model's scores: from the cache when there, else computed (and cached). */
    public Perplexity.Scored scores() {
        String digest = key.join();
        Path file = digest == null ? null : cache.resolve("gate-baseline").resolve(digest + ".json");
        if (file != null && Files.isRegularFile(file)) {
            try {
                Cached c = JSON.readValue(file.toFile(), Cached.class);
                return new Perplexity.Scored(new Perplexity.Result(c.perplexity(), c.meanNll(), c.scoredTokens(), c.windows(),
                        c.droppedTrailingTokens()), c.top1());
            } catch (IOException e) {
                // an unreadable entry is recomputed and replaced
            }
        }
        Perplexity.Scored s = FloatScoring.score(ckpt, text);
        if (file != null) {
            Perplexity.Result r = s.result();
            try {
                Files.createDirectories(file.getParent());
                Path tmp = Files.createTempFile(file.getParent(), "baseline", ".partial");
                JSON.writeValue(tmp.toFile(), new Cached(r.perplexity(), r.meanNll(), r.scoredTokens(), r.windows(),
                        r.droppedTrailingTokens(), s.top1()));
                Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            } catch (IOException e) {
                // a cache that cannot be written only costs the next run this computation
            }
        }
        return s;
    }

    static String key(String modelDigest, GateText text) {
        try {
            MessageDigest md = MessageDigest.getInstance("SHA-256");
            md.update(modelDigest.getBytes());
            md.update(text.digest().getBytes());
            return HexFormat.of().formatHex(md.digest());
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
