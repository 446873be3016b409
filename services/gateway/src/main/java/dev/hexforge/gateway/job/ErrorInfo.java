package dev.hexforge.gateway.job;

import jakarta.persistence.Column;
import jakarta.persistence.Embeddable;

import java.util.Map;

/** Why a job or a stage attempt failed, as its row keeps it: the error code, the message and the hint that names the fix. */
@Embeddable
public class ErrorInfo {
    @Column(name = "error_code")
    public String code;
    @Column(name = "error_message", columnDefinition = "text")
    public String message;
    @Column(name = "error_hint", columnDefinition = "text")
    public String hint;

    protected ErrorInfo() {
    }

    public ErrorInfo(String code, String message, String hint) {
        this.code = code;
        this.message = message;
        this.hint = hint;
    }

    /** As the API shows it: code, message and hint (empty when there is none). */
    Map<String, Object> view() {
        return Map.of("code", code == null ? "" : code, "message", message == null ? "" : message, "hint", hint == null ? "" : hint);
    }
}
