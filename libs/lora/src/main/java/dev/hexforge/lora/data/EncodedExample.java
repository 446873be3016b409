package dev.hexforge.lora.data;

import dev.hexforge.lora.train.TrainingExample;

/**
 * A tokenized example: the sequence and its loss mask, and for exact-match evaluation the prompt length (tokens
 * before the last response) and the expected response text (null for plain text).
 */
public record EncodedExample(TrainingExample example, int promptLength, String expected) {
}
