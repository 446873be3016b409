package dev.hexforge.artifactservice;

import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

import java.time.Duration;

/**
 * The artifact service's own {@code hexforge.*} settings (artifact-service.properties gives the deployment defaults).
 *
 * @param signing        the key new artifacts are signed with, and earlier ones still served
 * @param downloadUrlTtl how long a presigned download URL stays valid
 * @param internalToken  the shared secret the gateway sends on internal calls; empty refuses every internal call
 */
@ConfigurationProperties("hexforge")
record ArtifactServiceProperties(@DefaultValue Signing signing, @DefaultValue("5m") Duration downloadUrlTtl,
                                 @DefaultValue("") String internalToken) {

    /**
     * @param key                a PKCS#8 / SEC1 PEM file
     * @param keystore           or a PKCS#12 keystore, with its password and (when it holds several keys) alias
     * @param generate           create the PEM key at {@code key} when it does not exist (standalone mode)
     * @param previousPublicKeys PEM files (comma-separated) of earlier keys, still served for verification
     */
    record Signing(@DefaultValue("") String key, @DefaultValue("") String keystore, @DefaultValue("") String keystorePassword,
                   @DefaultValue("") String keystoreAlias, @DefaultValue("false") boolean generate,
                   @DefaultValue("") String previousPublicKeys) {
    }
}
