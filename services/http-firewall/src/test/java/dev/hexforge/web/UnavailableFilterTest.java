package dev.hexforge.web;

import org.junit.jupiter.api.Test;
import org.springframework.mock.web.MockHttpServletRequest;
import org.springframework.mock.web.MockHttpServletResponse;

import java.sql.SQLTransientConnectionException;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class UnavailableFilterTest {

    @Test
    void aRequestThatFoundTheDatabaseAwayIsA503WithRetryAfter() throws Exception {
        // what Spring and Hikari throw when no connection comes within the pool's timeout
        RuntimeException away = new org.springframework.transaction.CannotCreateTransactionException("Could not open JPA EntityManager",
                new org.hibernate.exception.JDBCConnectionException("Unable to acquire JDBC Connection",
                        new SQLTransientConnectionException("HikariPool-1 - Connection is not available, request timed out after 1000ms")));
        MockHttpServletResponse res = new MockHttpServletResponse();
        new UnavailableFilter().doFilter(new MockHttpServletRequest("GET", "/api/v1/jobs"), res, (rq, rs) -> {
            throw away;
        });
        assertEquals(503, res.getStatus());
        assertEquals("5", res.getHeader("Retry-After"));
        assertTrue(res.getContentAsString().contains("the database is unavailable"), res.getContentAsString());
    }

    @Test
    void aConnectionRefusedByTheDriverCountsToo() throws Exception {
        MockHttpServletResponse res = new MockHttpServletResponse();
        new UnavailableFilter().doFilter(new MockHttpServletRequest("POST", "/api/v1/jobs"), res, (rq, rs) -> {
            throw new jakarta.servlet.ServletException(new org.springframework.dao.DataAccessResourceFailureException("x",
                    new java.sql.SQLException("Connection to 127.0.0.1:15432 refused", "08001")));
        });
        assertEquals(503, res.getStatus());
    }

    @Test
    void aPooledConnectionTheStoppingServerTerminatedCountsToo() throws Exception {
        // what a request gets on a pooled connection when PostgreSQL shuts down (found by FaultHarnessTest: it was a 500)
        for (String state : new String[]{"57P01", "57P03"}) {
            MockHttpServletResponse res = new MockHttpServletResponse();
            new UnavailableFilter().doFilter(new MockHttpServletRequest("GET", "/api/v1/jobs"), res, (rq, rs) -> {
                throw new org.springframework.orm.jpa.JpaSystemException(new org.hibernate.exception.GenericJDBCException("JDBC exception executing SQL",
                        new java.sql.SQLException("FATAL: terminating connection due to administrator command", state)));
            });
            assertEquals(503, res.getStatus(), state);
        }
    }

    @Test
    void otherFailuresAreNotDressedUpAsUnavailability() {
        assertThrows(IllegalStateException.class, () -> new UnavailableFilter().doFilter(new MockHttpServletRequest("GET", "/api/v1/jobs"),
                new MockHttpServletResponse(), (rq, rs) -> {
                    throw new IllegalStateException("a bug");
                }));
    }
}
