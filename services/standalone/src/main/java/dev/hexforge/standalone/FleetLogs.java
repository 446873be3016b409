package dev.hexforge.standalone;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.encoder.PatternLayoutEncoder;
import ch.qos.logback.classic.filter.ThresholdFilter;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.ConsoleAppender;
import ch.qos.logback.core.FileAppender;
import org.slf4j.LoggerFactory;
import org.slf4j.bridge.SLF4JBridgeHandler;

import java.nio.file.Path;

/**
 * Where {@code hexforge up} and {@code hexforge demo} send the fleet's logs: every line (the services' INFO, the
 * broker's and servers' warnings) to {@code <state>/logs/fleet.log}, and only errors to the console, which is left to
 * the command's own lines. Spring Boot is told not to reconfigure logging as each service starts, so the levels the
 * services' properties files set are set here instead.
 */
final class FleetLogs {
    static final String FILE = "logs/fleet.log";

    private FleetLogs() {
    }

    static Path toFile(Path home) {
        System.setProperty("org.springframework.boot.logging.LoggingSystem", "none");
        Path file = home.resolve(FILE);
        LoggerContext ctx = (LoggerContext) LoggerFactory.getILoggerFactory();
        ctx.reset();
        FileAppender<ILoggingEvent> toFile = new FileAppender<>();
        toFile.setContext(ctx);
        toFile.setName("FILE");
        toFile.setFile(file.toString());
        toFile.setAppend(true);
        toFile.setEncoder(encoder(ctx));
        toFile.start();
        ConsoleAppender<ILoggingEvent> console = new ConsoleAppender<>();
        console.setContext(ctx);
        console.setName("STDERR");
        console.setTarget("System.err");
        console.setEncoder(encoder(ctx));
        ThresholdFilter errors = new ThresholdFilter();
        errors.setLevel(Level.ERROR.levelStr);
        errors.start();
        console.addFilter(errors);
        console.start();
        Logger root = ctx.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);
        root.setLevel(Level.WARN);
        root.addAppender(toFile);
        root.addAppender(console);
        ctx.getLogger("dev.hexforge").setLevel(Level.INFO);
        ctx.getLogger("ai.djl.util.cuda").setLevel(Level.ERROR); // DJL's CUDA probe warns on every machine without a GPU
        ctx.getLogger("org.springdoc.core.events").setLevel(Level.ERROR);
        // Tomcat and others log through java.util.logging, which Spring Boot would have bridged: bridge it here
        SLF4JBridgeHandler.removeHandlersForRootLogger();
        SLF4JBridgeHandler.install();
        java.util.logging.Logger.getLogger("").setLevel(java.util.logging.Level.INFO);
        return file;
    }

    private static PatternLayoutEncoder encoder(LoggerContext ctx) {
        PatternLayoutEncoder e = new PatternLayoutEncoder();
        e.setContext(ctx);
        e.setPattern("%d{HH:mm:ss.SSS} %-5level [%thread] %logger{30} - %msg%n");
        e.start();
        return e;
    }
}
