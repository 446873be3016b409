package dev.hexforge.compileservice;

import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * The compile service's own {@code hexforge.*} setting.
 *
 * @param qnnSdkRoot an unpacked QNN SDK (QAIRT): enables the qnn-context-binary, qnn-model-lib and genie targets; empty: ort-qnn only
 */
@ConfigurationProperties("hexforge")
record CompileServiceProperties(@DefaultValue("") String qnnSdkRoot) {
}
