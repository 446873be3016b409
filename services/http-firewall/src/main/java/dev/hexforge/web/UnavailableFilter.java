package dev.hexforge.web;

import dev.hexforge.store.ArtifactStore;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.web.servlet.FilterRegistrationBean;
import org.springframework.dao.DataAccessResourceFailureException;
import org.springframework.transaction.CannotCreateTransactionException;
import org.springframework.web.filter.OncePerRequestFilter;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Optional;

/**
 * A request that failed because a dependency is away (PostgreSQL, the object store) is answered 503 with
 * {@code Retry-After}, naming what is away, instead of a 500: clients can act on it (wait and retry), and nothing
 * was half-written (the transaction rolled back). The connection pool gives up after
 * {@code spring.datasource.hikari.connection-timeout} (1 s), so the answer comes within about a second. It wraps
 * every filter after the firewall, the token check (which reads the database) included. The gateway and the artifact
 * service both answer this way, so a gateway passing the artifact service's answer on passes a 503 on as a 503.
 */
public class UnavailableFilter extends OncePerRequestFilter {
    private static final Logger LOG = LoggerFactory.getLogger(UnavailableFilter.class);
    public static final int RETRY_AFTER_SECONDS = 5;

    /** A device's long poll finishes on an async dispatch: that one too. */
    @Override
    protected boolean shouldNotFilterAsyncDispatch() {
        return false;
    }

    @Override
    protected void doFilterInternal(HttpServletRequest req, HttpServletResponse res, FilterChain chain) throws ServletException, IOException {
        try {
            chain.doFilter(req, res);
        } catch (ServletException | RuntimeException e) {
            Optional<String> away = dependencyAway(e);
            if (away.isEmpty() || res.isCommitted()) {
                throw e;
            }
            LOG.warn("{} {}: {} is unavailable ({})", req.getMethod(), req.getRequestURI(), away.get(), rootMessage(e));
            byte[] body = ("{\"status\": 503, \"error\": \"" + away.get() + " is unavailable; try again in a few seconds\"}")
                    .getBytes(StandardCharsets.UTF_8);
            res.resetBuffer();
            res.setStatus(HttpServletResponse.SC_SERVICE_UNAVAILABLE);
            res.setHeader("Retry-After", String.valueOf(RETRY_AFTER_SECONDS));
            res.setContentType("application/json");
            res.setContentLength(body.length);
            res.getOutputStream().write(body);
        }
    }

    /** What is away, when the failure (anywhere in its causes) is a dependency that cannot be reached. */
    public static Optional<String> dependencyAway(Throwable e) {
        if (DatabaseAway.in(e)) {
            return Optional.of("the database");
        }
        for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof CannotCreateTransactionException
                    || t instanceof DataAccessResourceFailureException) {
                return Optional.of("the database");
            }
            if (t instanceof ArtifactStore.StoreException && ArtifactStore.unreachable(t)) {
                return Optional.of("the object store");
            }
        }
        return Optional.empty();
    }

    private static Throwable rootCause(Throwable e) {
        Throwable t = e;
        while (t.getCause() != null && t.getCause() != t) {
            t = t.getCause();
        }
        return t;
    }

    private static String rootMessage(Throwable e) {
        Throwable t = rootCause(e);
        return t.getMessage() == null ? t.getClass().getSimpleName() : t.getMessage();
    }

    /** Registered right after the firewall, on every dispatch (a long poll finishes on an async one). */
    public static FilterRegistrationBean<UnavailableFilter> registration() {
        FilterRegistrationBean<UnavailableFilter> f =
                new FilterRegistrationBean<>(new UnavailableFilter());
        f.setOrder(RequestFirewall.ORDER + 1);
        return f;
    }
}
