package dev.hexforge.gateway.job;

import dev.hexforge.checkpoint.CheckpointException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ModelConfigCacheTest {
    private static String config(int hidden) {
        return "{\"model_type\": \"qwen2\", \"hidden_size\": " + hidden + ", \"intermediate_size\": 384, \"num_hidden_layers\": 4,"
                + " \"num_attention_heads\": 4, \"num_key_value_heads\": 2, \"vocab_size\": 2048}";
    }

    @Test
    void readsAFolderOnceWhileItsConfigStaysTheSame(@TempDir Path dir) throws Exception {
        Files.writeString(dir.resolve("config.json"), config(128));
        ModelConfigCache cache = new ModelConfigCache(4);
        assertSame(cache.read(dir), cache.read(dir));
        assertEquals(128, cache.read(dir).hiddenSize());
    }

    @Test
    void readsAgainWhenTheConfigChangesEvenWithTheSameSizeAndTime(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("config.json");
        Files.writeString(file, config(128));
        FileTime time = Files.getLastModifiedTime(file);
        ModelConfigCache cache = new ModelConfigCache(4);
        assertEquals(128, cache.read(dir).hiddenSize());

        Files.writeString(file, config(256)); // same length; a different modification time
        assertEquals(256, cache.read(dir).hiddenSize());

        Path replacement = dir.resolve("config.new"); // same length and time, another file moved into place
        Files.writeString(replacement, config(512));
        Files.setLastModifiedTime(replacement, time);
        Files.move(replacement, file, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        Files.setLastModifiedTime(file, time);
        assertEquals(512, cache.read(dir).hiddenSize());
    }

    @Test
    void aConfigThatCannotBeReadIsRefusedEveryTime(@TempDir Path dir) throws Exception {
        ModelConfigCache cache = new ModelConfigCache(4);
        assertTrue(assertThrows(CheckpointException.class, () -> cache.read(dir)).getMessage().contains("no config.json"));
        Files.writeString(dir.resolve("config.json"), "{\"model_type\": \"qwen2\"}");
        assertTrue(assertThrows(CheckpointException.class, () -> cache.read(dir)).getMessage().contains("missing required keys"));
        assertTrue(assertThrows(CheckpointException.class, () -> cache.read(dir)).getMessage().contains("missing required keys"));
        Files.writeString(dir.resolve("config.json"), config(128));
        assertEquals(128, cache.read(dir).hiddenSize());
    }

    @Test
    void keepsOnlyTheMostRecentlyUsedFolders(@TempDir Path dir) throws Exception {
        ModelConfigCache cache = new ModelConfigCache(2);
        Path[] folders = new Path[3];
        for (int i = 0; i < 3; i++) {
            folders[i] = Files.createDirectory(dir.resolve("m" + i));
            Files.writeString(folders[i].resolve("config.json"), config(128));
        }
        var first = cache.read(folders[0]);
        var second = cache.read(folders[1]);
        assertSame(first, cache.read(folders[0])); // used last: folder 1 is now the eldest
        cache.read(folders[2]);
        assertSame(first, cache.read(folders[0]));
        assertNotSame(second, cache.read(folders[1])); // was evicted: read again
    }
}
