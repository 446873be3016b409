package dev.hexforge.testing.fleet;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

@org.junit.jupiter.api.Tag("fleet")
@ExtendWith(FleetInfra.class)
class FleetInfraTest {

    @Test
    void containersWhereDockerIsEmbeddedServersOtherwiseAllThreeAnswer(FleetInfra.Endpoints e) throws Exception {
        assertEquals(FleetInfra.dockerAvailable() ? "containers" : "embedded", e.kind());
        try (Connection c = DriverManager.getConnection(e.jdbcUrl(), e.dbUser(), e.dbPassword()); ResultSet r =
                c.createStatement().executeQuery("SELECT 1")) {
            assertTrue(r.next());
        }
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, e.kafka()))) {
            assertNotNull(admin.describeCluster().clusterId().get(30, TimeUnit.SECONDS));
        }
        io.minio.MinioClient s3 = io.minio.MinioClient.builder().endpoint(e.s3Endpoint()).credentials(e.s3AccessKey(), e.s3SecretKey()).build();
        s3.makeBucket(io.minio.MakeBucketArgs.builder().bucket("fleet-infra-test").build());
        assertTrue(s3.bucketExists(io.minio.BucketExistsArgs.builder().bucket("fleet-infra-test").build()));
    }
}
