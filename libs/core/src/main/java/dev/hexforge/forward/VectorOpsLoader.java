package dev.hexforge.forward;

/** Picks {@link VectorOps} when the JVM was started with the incubator vector module, else {@link ScalarOps}. */
final class VectorOpsLoader {
    private VectorOpsLoader() {
    }

    static TensorOps load() {
        if (ModuleLayer.boot().findModule("jdk.incubator.vector").isPresent()) {
            try {
                return (TensorOps) Class.forName("dev.hexforge.forward.VectorOps").getDeclaredConstructor().newInstance();
            } catch (ReflectiveOperationException | LinkageError e) {
                return ScalarOps.INSTANCE;
            }
        }
        return ScalarOps.INSTANCE;
    }
}
