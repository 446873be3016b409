package dev.hexforge.contracts;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

class InputPolicyTest {
    @TempDir
    Path tmp;

    String refused(InputPolicy p, String value, boolean folder) {
        return assertThrows(InputPolicy.RefusedPathException.class, () -> p.resolve("f", value, folder)).problem().message();
    }

    @Test
    void onlyRealPathsUnderARootAndOutsideTheStateFolderPass() throws Exception {
        Path state = Files.createDirectories(tmp.resolve("state"));
        Path secrets = Files.createDirectories(state.resolve("secrets"));
        Files.writeString(secrets.resolve("api-token"), "hxf_x");
        Path models = Files.createDirectories(state.resolve("models"));
        Path model = Files.createDirectories(models.resolve("m"));
        Path data = Files.writeString(models.resolve("d.jsonl"), "{}");
        Path elsewhere = Files.createDirectories(tmp.resolve("elsewhere"));
        InputPolicy p = new InputPolicy(List.of(models, tmp), List.of(state));

        assertEquals(model.toRealPath(), p.resolve("f", model.toString(), true));
        assertEquals(data.toRealPath(), p.resolve("f", data.toString(), false));
        assertEquals(elsewhere.toRealPath(), p.resolve("f", elsewhere.toString(), true), "under the other root, outside the state");
        String outside = refused(p, secrets.toString(), true);
        assertEquals(outside, refused(p, state.resolve("no-such").toString(), true), "a denied path and a missing one read alike");
        assertEquals(outside, refused(p, "/etc", true));
        assertEquals(outside, refused(p, models + "/../secrets", true), "'..' is refused before the file system is asked");
        // a link made inside a root after the job was accepted: the stage resolves it again and refuses it
        Path link = Files.createSymbolicLink(models.resolve("later"), secrets);
        assertEquals(outside, refused(p, link.toString(), true));
        assertEquals(outside, refused(p, Files.createSymbolicLink(models.resolve("token"), secrets.resolve("api-token")).toString(), false));
        assertEquals("is not a folder", refused(p, data.toString(), true));
        assertEquals("is not a regular file", refused(p, model.toString(), false));
        assertEquals("must be an absolute path", refused(p, "models/m", true));
        assertEquals("does not exist", refused(p, models.resolve("gone").toString(), true));
        assertEquals("is outside the folders this fleet reads inputs from (/); upload it and name it by id",
                refused(new InputPolicy(List.of(Path.of("/")), List.of()), "/proc/self/environ", false), "/proc never, even under root /");
        String none = refused(InputPolicy.denyAll(), model.toString(), true);
        assertEquals("this fleet reads no server folders (hexforge.input-roots is empty); upload the input and name it by id", none);
    }
}
