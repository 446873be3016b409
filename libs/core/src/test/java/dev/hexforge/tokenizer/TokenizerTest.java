package dev.hexforge.tokenizer;

import com.fasterxml.jackson.databind.JsonNode;
import dev.hexforge.testing.Fixtures;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class TokenizerTest {
    static Tokenizer tok;

    @BeforeAll
    static void load() {
        tok = Tokenizer.load(Fixtures.qwen2Tiny());
    }

    @AfterAll
    static void close() {
        tok.close();
    }

    @Test
    void theBundledCpuLibraryIsLoadedEvenWhereAGpuIsVisibleAndNothingIsDownloaded() {
        // DJL would otherwise ask for (and download) a CUDA build on a GPU machine: tools/parity's run on one failed so
        if (System.getenv("RUST_FLAVOR") == null) {
            assertEquals("cpu", System.getProperty("RUST_FLAVOR"));
        }
        if (System.getenv("DJL_OFFLINE") == null) {
            assertEquals("true", System.getProperty("ai.djl.offline"));
        }
    }

    @Test
    void everyReferenceCaseEncodesAndDecodesLikeTheReference() {
        JsonNode cases = Fixtures.json(Fixtures.reference("tokenizer_cases.json")).path("cases");
        assertEquals(267, cases.size());
        for (JsonNode c : cases) {
            String text = c.path("text").asText();
            assertArrayEquals(Fixtures.ints(c.path("ids")), tok.encode(text), () -> "encode " + text);
            assertEquals(c.path("decoded").asText(), tok.decode(Fixtures.ints(c.path("ids"))), () -> "decode " + text);
        }
    }

    @Test
    void referencePromptsGiveTheirInputIds() {
        for (JsonNode p : Fixtures.json(Fixtures.reference("reference.json")).path("prompts")) {
            assertArrayEquals(Fixtures.ints(p.path("input_ids")), tok.encode(p.path("text").asText()), p.path("name").asText());
            assertEquals(p.path("greedy_new_text").asText(), tok.decode(Fixtures.ints(p.path("greedy_new_ids"))));
        }
    }

    @Test
    void wholeEvalTextGivesTheReferenceIds() throws Exception {
        String text = Files.readString(Fixtures.root().resolve("corpus/eval.txt"));
        assertArrayEquals(Fixtures.evalTxtIds(), tok.encode(text));
    }

    @Test
    void realQwenTokenizerMatchesAnIndependentImplementation() {
        JsonNode cases = Fixtures.json(Fixtures.root().resolve("qwen-tokenizer-real/cases.json")).path("cases");
        assertTrue(cases.size() >= 200);
        try (Tokenizer real = Tokenizer.load(Fixtures.root().resolve("qwen-tokenizer-real"))) {
            for (JsonNode c : cases) {
                String text = c.path("text").asText();
                int[] ids = Fixtures.ints(c.path("ids"));
                assertArrayEquals(ids, real.encode(text), () -> "encode " + text);
                assertEquals(c.path("decoded").asText(), real.decode(ids), () -> "decode " + text);
            }
        }
    }

    @Test
    void chatTemplateRendersChatMl() {
        assertNull(tok.chatTemplate().defaultSystemPrompt());
        assertEquals("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n", tok.chatTemplate().userPrompt("hi"));
    }

    @Test
    void realQwenTemplateAddsItsDefaultSystemPrompt() {
        ChatTemplate t = ChatTemplate.load(Fixtures.root().resolve("qwen-tokenizer-real"));
        assertEquals("You are Qwen, created by Alibaba Cloud. You are a helpful assistant.", t.defaultSystemPrompt());
        String withSystem = t.render(List.of(new ChatTemplate.Message("system", "S"), new ChatTemplate.Message("user", "u")), false);
        assertEquals("<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nu<|im_end|>\n", withSystem);
        assertTrue(t.userPrompt("u").startsWith("<|im_start|>system\nYou are Qwen"));
    }

    /**
     * Llama 3's header format, chosen from the template of a Llama 3 folder (synth's llama-3.2 tokenizer, whose
     * special tokens sit at Llama 3's ids), and by name where the folder says nothing; ChatML stays Qwen's.
     */
    @Test
    void llama3FoldersGetTheHeaderFormat(@org.junit.jupiter.api.io.TempDir Path dir) throws Exception {
        Files.createDirectories(dir.resolve("llama"));
        for (String f : List.of("tokenizer.json", "tokenizer_config.json")) {
            try (var in = TokenizerTest.class.getResourceAsStream("/dev/hexforge/synth/llama3/" + f)) {
                Files.copy(in, dir.resolve("llama").resolve(f));
            }
        }
        try (Tokenizer llama = Tokenizer.load(dir.resolve("llama"))) {
            ChatTemplate t = llama.chatTemplate();
            assertEquals(ChatTemplate.Format.LLAMA3, t.format());
            String rendered = t.render(List.of(new ChatTemplate.Message("system", "Be brief."),
                    new ChatTemplate.Message("user", " hi \n")), true);
            assertEquals("<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.<|eot_id|>"
                    + "<|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n",
                    rendered);
            int[] ids = llama.encode(t.userPrompt("A"));
            assertEquals(128000, ids[0]);
            assertEquals(128006, ids[1]);
            assertEquals(128009, llama.encode(t.endOfTurn())[0]);
            assertEquals(t.userPrompt("A"), llama.decode(ids));
        }
        Files.copy(dir.resolve("llama/tokenizer.json"), Files.createDirectories(dir.resolve("bare")).resolve("tokenizer.json"));
        assertEquals(ChatTemplate.Format.LLAMA3, ChatTemplate.load(dir.resolve("bare")).format(), "from the special tokens");
        assertEquals(ChatTemplate.Format.CHATML, tok.chatTemplate().format());
        assertEquals(ChatTemplate.Format.CHATML, ChatTemplate.load(dir.resolve("llama"), ChatTemplate.Format.CHATML).format());
        assertEquals(ChatTemplate.Format.LLAMA3, ChatTemplate.load(Fixtures.qwen2Tiny(), ChatTemplate.Format.LLAMA3).format());
        TokenizerException e = assertThrows(TokenizerException.class, () -> ChatTemplate.Format.parse("vicuna"));
        assertTrue(e.getMessage().contains("vicuna") && e.getMessage().contains("llama3"), e.getMessage());
    }

    @Test
    void missingTokenizerIsAClearError(@org.junit.jupiter.api.io.TempDir Path dir) {
        TokenizerException e = assertThrows(TokenizerException.class, () -> Tokenizer.load(dir));
        assertTrue(e.getMessage().contains("no tokenizer.json"));
    }
}
