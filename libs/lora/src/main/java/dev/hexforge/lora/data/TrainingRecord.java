package dev.hexforge.lora.data;

import dev.hexforge.tokenizer.ChatTemplate.Message;

import java.util.List;

/** One example as read from a dataset file, before tokenization. */
public sealed interface TrainingRecord {

    /** Alpaca: the prompt is {@code instruction} (+ "\n" + {@code input} when present), the response {@code output}. */
    record Instruction(String instruction, String input, String output) implements TrainingRecord {
    }

    /** A chat: loss on the assistant messages. */
    record Conversation(List<Message> messages) implements TrainingRecord {
        public Conversation {
            messages = List.copyOf(messages);
        }
    }

    /** Plain text: loss on every token. */
    record PlainText(String text) implements TrainingRecord {
    }
}
