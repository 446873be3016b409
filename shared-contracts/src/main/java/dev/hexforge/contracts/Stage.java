package dev.hexforge.contracts;

import java.util.Locale;

/** Pipeline stages, in the only order a job may run them. */
public enum Stage {
    FINETUNE, MERGE, QUANTIZE, EXPORT, COMPILE, SIGN, BENCHMARK;

    public String id() {
        return name().toLowerCase(Locale.ROOT);
    }

    public static Stage parse(String id) {
        for (Stage s : values()) {
            if (s.id().equals(id)) {
                return s;
            }
        }
        return null;
    }
}
