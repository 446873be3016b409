package dev.hexforge.web;

import org.junit.jupiter.api.Test;
import org.springframework.mock.web.MockFilterChain;
import org.springframework.mock.web.MockHttpServletRequest;
import org.springframework.mock.web.MockHttpServletResponse;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

class RequestFirewallTest {

    @Test
    void plainPathsPass() {
        for (String p : List.of("/", "/api/v1/jobs", "/api/v1/jobs/3f1c/events", "/app.js", "/webjars/uplot/1.6.32/dist/uPlot.min.css",
                "/api/v1/artifacts/x/download")) {
            assertTrue(RequestFirewall.problem(p).isEmpty(), p);
        }
    }

    @Test
    void everyOtherSpellingIsRefusedWithItsReason() {
        assertEquals("path parameters (';') are not accepted", RequestFirewall.problem("/internal;x/v1/artifacts").orElseThrow());
        assertEquals("path parameters (';') are not accepted", RequestFirewall.problem("/api;x/v1/keys").orElseThrow());
        assertEquals("encoded '%2e' in the path", RequestFirewall.problem("/api/v1/%2E%2E/internal").orElseThrow());
        assertEquals("encoded '%2f' in the path", RequestFirewall.problem("/internal%2Fv1/keys").orElseThrow());
        assertEquals("encoded '%5c' in the path", RequestFirewall.problem("/api/v1%5cjobs").orElseThrow());
        assertEquals("encoded '%25' in the path", RequestFirewall.problem("/api/v1/%252e").orElseThrow());
        assertEquals("empty path segment ('//')", RequestFirewall.problem("//internal/v1/keys").orElseThrow());
        assertEquals("'..' segment in the path", RequestFirewall.problem("/api/v1/../internal/v1/keys").orElseThrow());
        assertEquals("'.' segment in the path", RequestFirewall.problem("/api/./v1/keys").orElseThrow());
        assertEquals("path segment ending in '.'", RequestFirewall.problem("/api./v1/keys").orElseThrow());
        assertEquals("backslash in the path", RequestFirewall.problem("/api\\v1").orElseThrow());
        assertEquals("control, space or non-ASCII character in the path", RequestFirewall.problem("/api/v1/jobs\u0000").orElseThrow());
    }

    @Test
    void aRefusedRequestNeverReachesTheChain() throws Exception {
        MockHttpServletRequest req = new MockHttpServletRequest("GET", "/internal;x/v1/artifacts");
        MockHttpServletResponse res = new MockHttpServletResponse();
        MockFilterChain chain = new MockFilterChain();
        new RequestFirewall().doFilter(req, res, chain);
        assertEquals(400, res.getStatus());
        assertNull(chain.getRequest());
        assertTrue(res.getContentAsString().contains("path parameters"), res.getContentAsString());
        MockHttpServletResponse traced = new MockHttpServletResponse();
        new RequestFirewall().doFilter(new MockHttpServletRequest("TRACE", "/api/v1/jobs"), traced, new MockFilterChain());
        assertEquals(400, traced.getStatus());
    }

    @Test
    void theBearerSchemeIsCaseInsensitive() {
        assertEquals("hxf_a", RequestFirewall.bearer("Bearer hxf_a"));
        assertEquals("hxf_a", RequestFirewall.bearer("bearer hxf_a"));
        assertEquals("hxf_a", RequestFirewall.bearer("BEARER  hxf_a "));
        assertNull(RequestFirewall.bearer("Basic aGk6aGk="));
        assertNull(RequestFirewall.bearer("Bearer "));
        assertNull(RequestFirewall.bearer(null));
    }
}
