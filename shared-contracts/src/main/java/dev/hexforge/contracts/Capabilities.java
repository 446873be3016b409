package dev.hexforge.contracts;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * What this fleet can run right now: the stages whose service is deployed, the quantize methods, and the compile
 * targets (SDK targets only where a QNN SDK is configured). A spec asking for more is refused at submission.
 */
public record Capabilities(Set<Stage> stages, Set<String> quantizeMethods, Set<String> compileTargets,
                           Set<String> benchmarkBackends) {

    public List<Problem> check(JobSpec spec) {
        List<Problem> problems = new ArrayList<>();
        for (Stage s : spec.stageList()) {
            if (!stages.contains(s)) {
                problems.add(new Problem("stages", "stage '" + s.id() + "' cannot run here: no " + s.id()
                        + " service is available in this deployment"));
            }
        }
        if (spec.stageList().contains(Stage.QUANTIZE) && !quantizeMethods.contains(spec.quantize().method())) {
            problems.add(new Problem("quantize.method", "method '" + spec.quantize().method() + "' is not available; available: "
                    + quantizeMethods));
        }
        if (spec.stageList().contains(Stage.COMPILE) && !compileTargets.contains(spec.compile().target())) {
            problems.add(new Problem("compile.target", "target '" + spec.compile().target() + "' needs a QNN SDK and none is "
                    + "configured (set QNN_SDK_ROOT on the compile service); available: " + compileTargets));
        }
        if (spec.stageList().contains(Stage.BENCHMARK)) {
            for (String b : spec.benchmark().backends()) {
                if (!benchmarkBackends.contains(b)) {
                    problems.add(new Problem("benchmark.backends", "no registered device runner offers backend '" + b
                            + "'; available: " + benchmarkBackends));
                }
            }
        }
        return problems;
    }

    public void require(JobSpec spec) {
        List<Problem> p = check(spec);
        if (!p.isEmpty()) {
            throw new InvalidJobSpecException(p);
        }
    }
}
