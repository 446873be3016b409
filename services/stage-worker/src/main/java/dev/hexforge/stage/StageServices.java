package dev.hexforge.stage;

import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * Starts a stage service: the shared configuration (stage-service.properties) with the service's own file
 * ({@code SERVICE.properties}) over it, so several services can share a JVM (standalone mode, tests) each with its
 * own settings.
 */
public final class StageServices {
    private StageServices() {
    }

    /** @param service the service's name, e.g. {@code quantize-service}: its configuration file, group and work folder */
    public static ConfigurableApplicationContext start(Class<?> application, String service, String... args) {
        return new SpringApplicationBuilder(application)
                .properties("spring.config.name=stage-service," + service, "hexforge.service=" + service)
                .run(args);
    }
}
