package dev.hexforge.web;

import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpFilter;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import org.springframework.boot.web.servlet.FilterRegistrationBean;

import java.io.IOException;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;

/**
 * Refuses, with 400 and before any routing or authentication, a request whose path is not in one plain form: path
 * parameters ({@code ;}), encoded dots, slashes, backslashes or percent signs ({@code %2e %2f %5c %25}), {@code //},
 * {@code .} and {@code ..} segments, trailing dots, backslashes, control and non-ASCII characters. Authentication
 * decisions taken on such a path could disagree with the handler the container routes it to (the {@code /internal;x/}
 * bypass); refusing them leaves one spelling for every endpoint. Methods other than the usual ones are refused too.
 * Register it first ({@link #ORDER}).
 */
public class RequestFirewall extends HttpFilter {
    /** Ahead of every other filter. */
    public static final int ORDER = Integer.MIN_VALUE;
    private static final Set<String> METHODS = Set.of("GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS");

    /** The firewall as a servlet filter registered ahead of every other. */
    public static FilterRegistrationBean<RequestFirewall> registration() {
        FilterRegistrationBean<RequestFirewall> f =
                new FilterRegistrationBean<>(new RequestFirewall());
        f.setOrder(ORDER);
        return f;
    }

    /** Why a raw request path is refused, or empty when it is in plain form. */
    public static Optional<String> problem(String rawPath) {
        if (rawPath == null || rawPath.isEmpty() || rawPath.charAt(0) != '/') {
            return Optional.of("the path must start with '/'");
        }
        for (int i = 0; i < rawPath.length(); i++) {
            char c = rawPath.charAt(i);
            if (c < 0x21 || c > 0x7e) {
                return Optional.of("control, space or non-ASCII character in the path");
            }
            if (c == ';') {
                return Optional.of("path parameters (';') are not accepted");
            }
            if (c == '\\') {
                return Optional.of("backslash in the path");
            }
        }
        String lower = rawPath.toLowerCase(Locale.ROOT);
        for (String encoded : new String[]{"%2e", "%2f", "%5c", "%25", "%3b", "%00"}) {
            if (lower.contains(encoded)) {
                return Optional.of("encoded '" + encoded + "' in the path");
            }
        }
        if (rawPath.contains("//")) {
            return Optional.of("empty path segment ('//')");
        }
        for (String segment : rawPath.substring(1).split("/", -1)) {
            if (segment.equals(".") || segment.equals("..")) {
                return Optional.of("'" + segment + "' segment in the path");
            }
            if (segment.endsWith(".")) {
                return Optional.of("path segment ending in '.'");
            }
        }
        return Optional.empty();
    }

    @Override
    protected void doFilter(HttpServletRequest request, HttpServletResponse response, FilterChain chain)
            throws ServletException, IOException {
        SecurityHeaders.apply(request, response);
        Optional<String> problem = METHODS.contains(request.getMethod()) ? problem(request.getRequestURI())
                : Optional.of("method " + request.getMethod() + " is not accepted");
        if (problem.isPresent()) {
            response.setStatus(HttpServletResponse.SC_BAD_REQUEST);
            response.setContentType("application/json");
            response.getWriter().write("{\"error\":\"request refused: " + problem.get().replace("\"", "'") + "\"}");
            return;
        }
        chain.doFilter(request, response);
    }

    /**
     * The token of an {@code Authorization: Bearer <token>} header (the scheme in any case, RFC 7235), or null when
     * the header is absent or of another scheme.
     */
    public static String bearer(String header) {
        if (header == null || header.length() < 7 || !header.regionMatches(true, 0, "Bearer ", 0, 7)) {
            return null;
        }
        String t = header.substring(7).trim();
        return t.isEmpty() ? null : t;
    }
}
