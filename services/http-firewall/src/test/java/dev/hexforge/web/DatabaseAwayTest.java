package dev.hexforge.web;

import org.junit.jupiter.api.Test;

import java.sql.SQLException;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class DatabaseAwayTest {
    @Test
    void connectionFailuresAreAway() {
        assertTrue(DatabaseAway.in(new RuntimeException(new java.sql.SQLTransientConnectionException("HikariPool-1 - Connection is not available"))));
        assertTrue(DatabaseAway.in(new SQLException("Connection to 127.0.0.1:15432 refused", "08001")));
        assertTrue(DatabaseAway.in(new RuntimeException(new SQLException("FATAL: terminating connection due to administrator command", "57P01"))));
        assertTrue(DatabaseAway.in(new SQLException("FATAL: the database system is starting up", "57P03")));
        assertTrue(DatabaseAway.in(new SQLException("Connection is closed")));
        assertTrue(DatabaseAway.in(new RuntimeException(new SQLException("I/O error", null, new java.net.SocketException("Connection reset")))));
    }

    @Test
    void refusedStatementsAndOtherFailuresAreNot() {
        assertFalse(DatabaseAway.in(new SQLException("value too long for type character varying(64)", "22001")));
        assertFalse(DatabaseAway.in(new SQLException("duplicate key value violates unique constraint", "23505")));
        assertFalse(DatabaseAway.in(new IllegalStateException("a bug")));
        assertFalse(DatabaseAway.in(new java.net.SocketException("not the database's")));
    }
}
