package dev.hexforge.infra;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;

/** PostgreSQL from the zonky binaries, data under {@code dir} (kept across restarts), on a fixed port. */
public final class EmbeddedPostgres implements AutoCloseable {
    public static final String DATABASE = "hexforge";
    private final io.zonky.test.db.postgres.embedded.EmbeddedPostgres pg;

    private EmbeddedPostgres(io.zonky.test.db.postgres.embedded.EmbeddedPostgres pg) {
        this.pg = pg;
    }

    public static EmbeddedPostgres start(Path dir, int port) {
        try {
            Files.createDirectories(dir);
            io.zonky.test.db.postgres.embedded.EmbeddedPostgres pg = io.zonky.test.db.postgres.embedded.EmbeddedPostgres.builder()
                    .setDataDirectory(dir.resolve("data"))
                    .setCleanDataDirectory(false)
                    .setPort(port)
                    .start();
            try (Connection c = pg.getPostgresDatabase().getConnection(); Statement s = c.createStatement()) {
                var rs = s.executeQuery("SELECT 1 FROM pg_database WHERE datname = '" + DATABASE + "'");
                if (!rs.next()) {
                    s.execute("CREATE DATABASE " + DATABASE);
                }
            }
            return new EmbeddedPostgres(pg);
        } catch (IOException e) {
            throw new UncheckedIOException("starting PostgreSQL in " + dir + ": " + e.getMessage(), e);
        } catch (SQLException e) {
            throw new IllegalStateException("preparing the " + DATABASE + " database: " + e.getMessage(), e);
        }
    }

    public String jdbcUrl() {
        return pg.getJdbcUrl("postgres", DATABASE);
    }

    public String user() {
        return "postgres";
    }

    public String password() {
        return "postgres";
    }

    @Override
    public void close() {
        try {
            pg.close();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
