/** Last-position logits of Hexforge's Java reference forward, for tools/parity/numpy_forward.py (docs/parity.md). */
import dev.hexforge.checkpoint.Checkpoint;
import dev.hexforge.forward.DecoderForward;
import dev.hexforge.forward.DecoderWeights;
import java.nio.file.Path;
import java.util.Arrays;
public class JavaLogits {
    public static void main(String[] a) {
        int[] ids = Arrays.stream(a[1].split(",")).mapToInt(Integer::parseInt).toArray();
        try (Checkpoint c = Checkpoint.open(Path.of(a[0]))) {
            float[][] lg = new DecoderForward(DecoderWeights.load(c)).logits(ids);
            StringBuilder sb = new StringBuilder();
            for (float v : lg[ids.length - 1]) sb.append(v).append(' ');
            System.out.println(sb.toString().trim());
        }
    }
}
