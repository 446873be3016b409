package dev.hexforge.lora.data;

import dev.hexforge.testing.Fixtures;
import dev.hexforge.tokenizer.Tokenizer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class DatasetTest {
    @TempDir
    Path tmp;
    static Tokenizer tok;

    @BeforeAll
    static void load() {
        tok = Tokenizer.load(Fixtures.qwen2Tiny());
    }

    @AfterAll
    static void close() {
        tok.close();
    }

    Path file(String name, String content) throws Exception {
        Path p = tmp.resolve(name);
        Files.writeString(p, content);
        return p;
    }

    @Test
    void alpacaExampleIsTheChatMlPromptWithLossOnTheAnswerAndEndMarker() {
        var enc = new ExampleEncoder(tok, 256).encode(List.of(new TrainingRecord.Instruction("Which?", "Romeo said", "ROMEO")));
        EncodedExample e = enc.examples().get(0);
        int[] prompt = tok.encode("<|im_start|>user\nWhich?\nRomeo said<|im_end|>\n<|im_start|>assistant\n");
        int[] answer = tok.encode("ROMEO<|im_end|>");
        assertEquals(prompt.length, e.promptLength());
        assertArrayEquals(tok.encode("<|im_start|>user\nWhich?\nRomeo said<|im_end|>\n<|im_start|>assistant\nROMEO<|im_end|>"),
                e.example().tokens());
        assertEquals(answer.length, e.example().targetCount());
        for (int i = 0; i < e.example().tokens().length; i++) {
            assertEquals(i >= prompt.length, e.example().target()[i]);
        }
        assertEquals("ROMEO", e.expected());
    }

    @Test
    void chatLearnsEveryAssistantTurnAndNothingElse() throws Exception {
        Path p = file("chat.jsonl", "{\"messages\":[{\"role\":\"system\",\"content\":\"Be brief.\"},"
                + "{\"role\":\"user\",\"content\":\"Hi\"},{\"role\":\"assistant\",\"content\":\"Hello\"},"
                + "{\"role\":\"user\",\"content\":\"Name?\"},{\"role\":\"assistant\",\"content\":\"ROMEO\"}]}\n");
        EncodedExample e = new ExampleEncoder(tok, 256).encode(DatasetReader.read(p)).examples().get(0);
        String whole = "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
                + "Hello<|im_end|>\n<|im_start|>user\nName?<|im_end|>\n<|im_start|>assistant\nROMEO<|im_end|>\n";
        assertArrayEquals(tok.encode(whole), e.example().tokens());
        assertEquals("Hello<|im_end|>ROMEO<|im_end|>", learned(tok, e));
        assertEquals("ROMEO", e.expected());
    }

    /** Llama 3's header format (asked for by name here): each answer learnt with its {@code <|eot_id|>}, nothing else. */
    @Test
    void llama3ChatsLearnEachAnswerWithItsEndOfTurn() throws Exception {
        Path p = file("chat3.jsonl", "{\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"},{\"role\":\"assistant\",\"content\":\"Hello\"},"
                + "{\"role\":\"user\",\"content\":\"Name?\"},{\"role\":\"assistant\",\"content\":\"ROMEO \"}]}\n");
        try (Tokenizer llama = Tokenizer.load(Fixtures.qwen2Tiny(), dev.hexforge.tokenizer.ChatTemplate.Format.LLAMA3)) {
            EncodedExample e = new ExampleEncoder(llama, 512).encode(DatasetReader.read(p)).examples().get(0);
            String whole = "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
                    + "<|start_header_id|>assistant<|end_header_id|>\n\nHello<|eot_id|>"
                    + "<|start_header_id|>user<|end_header_id|>\n\nName?<|eot_id|>"
                    + "<|start_header_id|>assistant<|end_header_id|>\n\nROMEO<|eot_id|>";
            assertEquals(whole, llama.decode(e.example().tokens()));
            assertEquals("Hello<|eot_id|>ROMEO<|eot_id|>", learned(llama, e));
        }
    }

    /** The text of the tokens the loss covers, one after the other. */
    private static String learned(Tokenizer t, EncodedExample e) {
        StringBuilder learned = new StringBuilder();
        int[] ids = e.example().tokens();
        for (int i = 0; i < ids.length; i++) {
            if (e.example().target()[i]) {
                learned.append(t.decode(new int[]{ids[i]}));
            }
        }
        return learned.toString();
    }

    @Test
    void plainTextLearnsEveryTokenButTheFirst() throws Exception {
        Path p = file("t.txt", "To be or not to be.\n\n\nThat is the question.\n");
        var enc = new ExampleEncoder(tok, 256).encode(DatasetReader.read(p));
        assertEquals(2, enc.examples().size());
        EncodedExample e = enc.examples().get(0);
        assertEquals(e.example().tokens().length - 1, e.example().targetCount());
        assertNull(e.expected());
        assertInstanceOf(TrainingRecord.PlainText.class, DatasetReader.read(file("x.jsonl", "{\"text\":\"abc\"}\n")).get(0));
    }

    @Test
    void longExamplesAreCutAndCountedAndThoseLeftWithoutAnswerDropped() {
        String longInput = "word ".repeat(40);
        var enc = new ExampleEncoder(tok, 24).encode(List.of(
                new TrainingRecord.Instruction("Q", "", "A"),
                new TrainingRecord.Instruction("Q", longInput, "A"),
                new TrainingRecord.PlainText(longInput)));
        assertEquals(3, enc.report().records());
        assertEquals(2, enc.report().examples());
        assertEquals(2, enc.report().truncated());
        assertEquals(1, enc.report().dropped());
        assertTrue(enc.examples().stream().allMatch(e -> e.example().tokens().length <= 24));
    }

    @Test
    void badFilesAreRefusedNamingWhereAndWhat() throws Exception {
        assertMessage(file("empty.json", "[]"), "empty");
        assertMessage(file("empty.jsonl", "\n\n"), "empty");
        assertMessage(file("broken.json", "[{\"instruction\": "), "not valid JSON");
        assertMessage(file("obj.json", "{\"instruction\":\"x\"}"), "JSON array");
        assertMessage(file("noout.json", "[{\"instruction\":\"x\",\"input\":\"y\"}]"), "[0]: missing field 'output'");
        assertMessage(file("wrongtype.jsonl", "{\"instruction\":\"x\",\"output\":3}\n"), "line 1: 'output' must be a string");
        assertMessage(file("line2.jsonl", "{\"text\":\"a\"}\nnot json\n"), "line 2: not valid JSON");
        assertMessage(file("unknown.jsonl", "{\"prompt\":\"a\",\"completion\":\"b\"}\n"), "found fields [prompt, completion]");
        assertMessage(file("role.jsonl", "{\"messages\":[{\"role\":\"bot\",\"content\":\"a\"}]}\n"), "role 'bot'");
        assertMessage(file("noassistant.jsonl", "{\"messages\":[{\"role\":\"user\",\"content\":\"a\"}]}\n"), "no assistant");
        assertMessage(file("data.csv", "a,b\n"), "unknown data format");
        assertMessage(tmp.resolve("missing.json"), "no such file");
        DatasetException e = assertThrows(DatasetException.class, () -> new ExampleEncoder(tok, 4)
                .encode(List.of(new TrainingRecord.Instruction("a long instruction here", "", "A"))));
        assertTrue(e.getMessage().contains("no usable example"), e.getMessage());
    }

    private static void assertMessage(Path file, String expected) {
        DatasetException e = assertThrows(DatasetException.class, () -> DatasetReader.read(file));
        assertTrue(e.getMessage().contains(expected) && e.getMessage().contains(file.getFileName().toString()),
                e.getMessage() + " should name " + file.getFileName() + " and say: " + expected);
    }

    @Test
    void fixtureTaskReadsAsAlpaca() {
        var records = DatasetReader.read(Fixtures.root().resolve("lora-task/train.json"));
        assertEquals(800, records.size());
        assertTrue(Arrays.stream(records.toArray()).allMatch(r -> r instanceof TrainingRecord.Instruction));
    }
}
