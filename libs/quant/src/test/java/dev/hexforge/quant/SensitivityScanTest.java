package dev.hexforge.quant;

import dev.hexforge.checkpoint.Checkpoint;
import dev.hexforge.forward.DecoderWeights;
import dev.hexforge.quant.calib.CalibrationSet;
import dev.hexforge.testing.Fixtures;
import dev.hexforge.tokenizer.Tokenizer;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class SensitivityScanTest {

    @Test
    void keepsTheMostSensitiveLinearsWithinTheBudget() {
        try (Checkpoint ckpt = Checkpoint.open(Fixtures.qwen2Tiny()); Tokenizer tok = Tokenizer.load(Fixtures.qwen2Tiny())) {
            DecoderWeights base = DecoderWeights.load(ckpt);
            CalibrationSet calib = CalibrationSet.load(Fixtures.root().resolve("calib.jsonl"), tok, 16, 128, 0);
            QuantSpec three = new QuantSpec(3, 128, false);
            SensitivityScan.Result ten = SensitivityScan.run(base, calib, three, 10);
            assertEquals(28, ten.ranking().size());
            for (int i = 1; i < ten.ranking().size(); i++) {
                assertTrue(ten.ranking().get(i - 1).lossIncrease() >= ten.ranking().get(i).lossIncrease(), "ranked");
            }
            assertFalse(ten.keep().isEmpty());
            assertTrue(ten.extraBytes() <= ten.budgetBytes());
            String top = ten.ranking().get(0).name();
            assertTrue(ten.keep().contains(top.substring(0, top.length() - ".weight".length())), "the most sensitive is kept first");
            // keeping them lowers the calibration loss of the quantized model
            double lossAll = SensitivityScan.loss(new dev.hexforge.forward.DecoderForward(
                    QuantizedModel.rtn(ckpt, three, java.util.List.of()).fakeQuantized(base)), calib);
            double lossKept = SensitivityScan.loss(new dev.hexforge.forward.DecoderForward(
                    QuantizedModel.rtn(ckpt, three, ten.keep()).fakeQuantized(base)), calib);
            assertTrue(lossKept < lossAll, "kept " + lossKept + " vs all " + lossAll);
        }
    }
}
