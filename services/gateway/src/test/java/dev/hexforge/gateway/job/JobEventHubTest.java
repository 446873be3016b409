package dev.hexforge.gateway.job;

import org.junit.jupiter.api.Test;
import org.springframework.web.servlet.mvc.method.annotation.SseEmitter;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A job's event stream starts with its snapshot even when the stage events are published before the request has read
 * the job (what a loaded fleet did: a progress event reached the client ahead of the snapshot).
 */
class JobEventHubTest {
    /** Records what would go to the client, in order. */
    static final class Recording extends SseEmitter {
        final List<String> sent = new ArrayList<>();
        boolean completed;

        @Override
        public void send(SseEventBuilder builder) {
            StringBuilder text = new StringBuilder();
            builder.build().forEach(part -> text.append(part.getData()));
            sent.add(text.toString().lines().filter(l -> l.startsWith("event:")).findFirst().orElse("").substring(6).strip());
        }

        @Override
        public synchronized void complete() {
            completed = true;
        }
    }

    @Test
    void eventsPublishedBeforeTheSnapshotWaitForIt() throws IOException {
        Recording client = new Recording();
        JobEventHub.JobStream s = new JobEventHub.JobStream(client);
        s.send("progress", "{}", false);
        s.send("completed", "{}", false);
        assertEquals(List.of(), client.sent, "nothing before the snapshot");
        s.start("{}", false);
        s.send("progress", "{}", false);
        assertEquals(List.of("job", "progress", "completed", "progress"), client.sent);
        s.send("job", "{}", true);
        assertTrue(client.completed);
    }

    @Test
    void aJobThatEndsBeforeTheSnapshotEndsTheStreamAfterIt() throws IOException {
        Recording client = new Recording();
        JobEventHub.JobStream s = new JobEventHub.JobStream(client);
        s.send("completed", "{}", false);
        s.send("job", "{}", true);
        assertTrue(!client.completed);
        s.start("{}", false);
        assertEquals(List.of("job", "completed", "job"), client.sent);
        assertTrue(client.completed, "the last event waited, and so did the end");
    }
}
