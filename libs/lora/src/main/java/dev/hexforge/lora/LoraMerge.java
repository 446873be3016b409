package dev.hexforge.lora;

import dev.hexforge.checkpoint.Checkpoint;
import dev.hexforge.forward.DecoderWeights.LowRankDelta;
import dev.hexforge.io.Folders;
import dev.hexforge.safetensors.DType;
import dev.hexforge.safetensors.SafetensorsWriter;
import dev.hexforge.safetensors.ShardedWriter;
import dev.hexforge.safetensors.TensorInfo;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * PEFT's {@code merge_and_unload}: base + adapter into a full Hugging Face folder. Adapted weights become
 * {@code W + scale · (B @ A)} computed in float32 and stored in the base tensor's dtype; every other tensor and the
 * config and tokenizer files are copied unchanged. The folder appears only when complete.
 */
public final class LoraMerge {

    private LoraMerge() {
    }

    public static void merge(Checkpoint base, LoraAdapter adapter, Path out) {
        if (Files.exists(out)) {
            throw new LoraException(out + " already exists; choose another --out");
        }
        Path tmp = out.resolveSibling(out.getFileName() + ".partial");
        try {
            Files.createDirectories(tmp);
            List<SafetensorsWriter.Entry> entries = new ArrayList<>();
            for (String name : base.store().names()) {
                TensorInfo t = base.store().info(name);
                LowRankDelta d = adapter.deltas().get(name);
                if (d == null) {
                    entries.add(SafetensorsWriter.Entry.copyOf(base.store().file(name), name));
                } else {
                    DType dtype = t.dtype();
                    entries.add(new SafetensorsWriter.Entry(name, dtype, t.shape(), ch -> SafetensorsWriter.writeFully(ch,
                            SafetensorsWriter.encode(LoraAdapter.merged(base.floats(name), d), dtype))));
                }
            }
            // in Hugging Face's shards when over its shard size, as save_pretrained writes a merged model
            ShardedWriter.write(tmp, Map.of("format", "pt"), entries, ShardedWriter.DEFAULT_SHARD_BYTES);
            base.copySideFiles(tmp);
            Files.move(tmp, out, StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException | RuntimeException e) {
            Folders.deleteQuietly(tmp);
            if (e instanceof IOException io) {
                throw new UncheckedIOException("merging into " + out + ": " + io.getMessage(), io);
            }
            throw (RuntimeException) e;
        }
    }

}
