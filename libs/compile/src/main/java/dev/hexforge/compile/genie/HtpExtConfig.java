package dev.hexforge.compile.genie;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.hexforge.compile.CompileException;
import dev.hexforge.compile.Soc;

/**
 * {@code htp_backend_ext_config.json}, the HTP backend extension config a Genie bundle loads: the device (SoC model id
 * and Hexagon architecture), one core in burst mode, shared-buffer memory, and weight sharing, without which a
 * context binary holding a part's prompt and token graphs is refused.
 */
public final class HtpExtConfig {
    public static final String FILE = "htp_backend_ext_config.json";
    private static final ObjectMapper JSON = new ObjectMapper();

    private HtpExtConfig() {
    }

    public static ObjectNode of(Soc soc) {
        if (soc.qnnSocModel() == 0) {
            throw new CompileException("the HTP backend needs the SoC model id of " + soc.name() + ", which Hexforge does not know",
                    "use one of " + Soc.KNOWN.stream().map(k -> k.name() + " (" + k.marketing() + ")").toList());
        }
        ObjectNode root = JSON.createObjectNode();
        ObjectNode device = root.putArray("devices").addObject();
        device.put("soc_model", soc.qnnSocModel());
        device.put("dsp_arch", "v" + soc.htpArch());
        ObjectNode core = device.putArray("cores").addObject();
        core.put("core_id", 0);
        core.put("perf_profile", "burst");
        core.put("rpc_control_latency", 100);
        root.putObject("memory").put("mem_type", "shared_buffer");
        root.putObject("context").put("weight_sharing_enabled", true);
        return root;
    }
}
