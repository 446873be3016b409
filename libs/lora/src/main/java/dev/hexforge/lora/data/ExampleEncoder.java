package dev.hexforge.lora.data;

import dev.hexforge.lora.train.TrainingExample;
import dev.hexforge.tokenizer.ChatTemplate;
import dev.hexforge.tokenizer.ChatTemplate.Message;
import dev.hexforge.tokenizer.Tokenizer;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Turns records into token sequences with the model's chat template (ChatML for Qwen, Llama 3's header format for
 * Llama 3). Instructions become one user turn ({@code instruction\ninput}) answered by the output and the format's
 * end of turn ({@code <|im_end|>}, {@code <|eot_id|>}); the loss covers the answer and its end marker. Sequences
 * longer than {@code maxLength} are cut at the end; an example left with no target token is dropped. Both are counted in the {@link DataReport}.
 */
public final class ExampleEncoder {
    private final Tokenizer tokenizer;
    private final ChatTemplate template;
    private final int maxLength;

    public ExampleEncoder(Tokenizer tokenizer, int maxLength) {
        if (maxLength < 2) {
            throw new IllegalArgumentException("max length must be at least 2 tokens, got " + maxLength);
        }
        this.tokenizer = tokenizer;
        this.template = tokenizer.chatTemplate();
        this.maxLength = maxLength;
    }

    public record Encoded(List<EncodedExample> examples, DataReport report) {
    }

    public Encoded encode(List<TrainingRecord> records) {
        List<EncodedExample> out = new ArrayList<>();
        int truncated = 0;
        int dropped = 0;
        long tokens = 0;
        long targets = 0;
        for (TrainingRecord r : records) {
            List<int[]> pieces = new ArrayList<>();
            List<Boolean> learn = new ArrayList<>();
            String expected = null;
            int promptLength = 0;
            if (r instanceof TrainingRecord.Instruction in) {
                String user = in.input().isEmpty() ? in.instruction() : in.instruction() + "\n" + in.input();
                pieces.add(tokenizer.encode(template.userPrompt(user)));
                learn.add(false);
                pieces.add(tokenizer.encode(template.answer(in.output()) + template.endOfTurn()));
                learn.add(true);
                expected = in.output();
            } else if (r instanceof TrainingRecord.Conversation conv) {
                List<Message> ms = conv.messages();
                int lastAssistant = -1;
                for (int i = 0; i < ms.size(); i++) {
                    if (ms.get(i).role().equals("assistant")) {
                        lastAssistant = i;
                    }
                }
                StringBuilder context = new StringBuilder();
                for (int i = 0; i < ms.size(); i++) {
                    Message m = ms.get(i);
                    if (m.role().equals("assistant")) {
                        String before = template.render(ms.subList(0, i), true);
                        pieces.add(tokenizer.encode(before.substring(context.length())));
                        learn.add(false);
                        String answer = template.answer(m.content()) + template.endOfTurn();
                        pieces.add(tokenizer.encode(answer));
                        learn.add(true);
                        context.setLength(0);
                        context.append(before).append(answer);
                        if (i == lastAssistant) {
                            expected = m.content();
                        }
                    }
                }
                String rest = template.render(ms, false).substring(context.length());
                if (!rest.isEmpty()) {
                    pieces.add(tokenizer.encode(rest));
                    learn.add(false);
                }
            } else if (r instanceof TrainingRecord.PlainText text) {
                pieces.add(tokenizer.encode(text.text()));
                learn.add(true);
            }
            int total = pieces.stream().mapToInt(p -> p.length).sum();
            int[] ids = new int[total];
            boolean[] target = new boolean[total];
            int at = 0;
            for (int i = 0; i < pieces.size(); i++) {
                int[] p = pieces.get(i);
                System.arraycopy(p, 0, ids, at, p.length);
                if (learn.get(i)) {
                    Arrays.fill(target, at, at + p.length, true);
                }
                if (expected != null && learn.get(i)) {
                    promptLength = at;
                }
                at += p.length;
            }
            if (total > 0) {
                target[0] = false;
            }
            if (total > maxLength) {
                truncated++;
                ids = Arrays.copyOf(ids, maxLength);
                target = Arrays.copyOf(target, maxLength);
            }
            TrainingExample e = new TrainingExample(ids, target);
            if (ids.length < 2 || e.targetCount() == 0) {
                dropped++;
                continue;
            }
            tokens += ids.length;
            targets += e.targetCount();
            out.add(new EncodedExample(e, expected == null ? ids.length : promptLength, expected));
        }
        if (out.isEmpty()) {
            throw new DatasetException("no usable example: all " + records.size() + " were empty or had nothing left "
                    + "to learn after cutting to " + maxLength + " tokens");
        }
        return new Encoded(out, new DataReport(records.size(), out.size(), truncated, dropped, tokens, targets));
    }
}
