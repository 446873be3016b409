package dev.hexforge.web;

import org.springframework.util.backoff.BackOff;
import org.springframework.util.backoff.ExponentialBackOff;

import java.net.SocketException;
import java.sql.SQLException;
import java.sql.SQLTransientConnectionException;

/**
 * Whether a failure is the database away for now — not answering, dropping connections, shutting down or still
 * starting — as opposed to refusing a statement: the services answer 503 for it and wait for it, where a refused
 * statement is a defect to report. Only JDK types are looked at (the drivers' and pools' exceptions carry them).
 */
public final class DatabaseAway {
    private DatabaseAway() {
    }

    /** True when anywhere in the causes is a connection failure (SQLSTATE class 08 or 57P01-57P03, a pool timeout, a closed connection). */
    public static boolean in(Throwable e) {
        boolean sql = false;
        boolean network = false;
        for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof SQLTransientConnectionException
                    || t instanceof SQLException s && (awayState(s.getSQLState())
                    || "Connection is closed".equals(s.getMessage()))) { // Hikari's word for a connection the database dropped
                return true;
            }
            sql |= t instanceof SQLException;
            network |= t instanceof SocketException;
        }
        return sql && network;
    }

    /**
     * How a listener tries again while a dependency is away: without end, 0.5 s, then 1, 2, 4 and every 5 s (the gateway's
     * stage events and the artifact service's catalogue both wait this way).
     */
    public static BackOff untilBack() {
        ExponentialBackOff b = new ExponentialBackOff(500, 2.0);
        b.setMaxInterval(5_000);
        b.setMaxElapsedTime(Long.MAX_VALUE);
        return b;
    }

    /**
     * SQLSTATE class 08 (connection exception), and the server shutting down (57P01 on a pooled connection when it
     * stops, 57P02 when it crashed) or still starting (57P03).
     */
    static boolean awayState(String sqlState) {
        return sqlState != null && (sqlState.startsWith("08") || sqlState.equals("57P01") || sqlState.equals("57P02") || sqlState.equals("57P03"));
    }
}
