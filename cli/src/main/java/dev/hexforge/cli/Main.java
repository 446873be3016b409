package dev.hexforge.cli;

import dev.hexforge.contracts.HexforgeException;
import dev.hexforge.memory.MemoryPlan;
import picocli.CommandLine.Command;
import picocli.CommandLine;

/** The {@code hexforge} command line. */
@Command(name = "hexforge", mixinStandardHelpOptions = true, version = "hexforge 0.1.0",
        description = "Turn Hugging Face LLMs into signed, benchmarked models for the Hexagon NPU.",
        subcommands = {JobCommands.Submit.class, JobCommands.Watch.class, JobCommands.Show.class, UploadCommand.class, DownloadCommand.class, TokenCommands.class, DeviceCommands.class, ConvertCommand.class, ExportCommand.class, QuantizeCommand.class, CompileCommand.class, FinetuneCommand.class, MergeCommand.class, SignCommand.class, VerifyCommand.class, KeygenCommand.class, GenerateCommand.class, EvalCommand.class, CheckQnnCommand.class, DoctorCommand.class, SocsCommand.class,
                SynthCommand.class, BenchCommand.class, CommandLine.HelpCommand.class})
public final class Main implements Runnable {

    public static void main(String[] args) {
        Stop.install();
        int code = run(args);
        if (Stop.signal() != null) {
            System.err.println("hexforge: stopped by " + Stop.signal() + "; the output folder was left as it was");
            code = Stop.exitCode();
        }
        System.exit(code);
    }

    public static int run(String... args) {
        CommandLine cl = new CommandLine(new Main());
        cl.setDefaultValueProvider(new SpecOptions());
        cl.setResourceBundle(SpecOptions.help());
        cl.setExecutionExceptionHandler((ex, cmd, parsed) -> {
            if (Stop.signal() != null) {
                return 1; // stopped on purpose: main says so in one line
            }
            // the passes name settings by their job-spec fields; here they are the flags that set them
            cmd.getErr().println("hexforge: error: " + FlagNames.translate(describe(ex), cmd.getCommandSpec()));
            if (ex instanceof HexforgeException h) {
                cmd.getErr().println("hexforge: " + h.code() + ": " + FlagNames.translate(h.hint(), cmd.getCommandSpec()));
            }
            if (Boolean.getBoolean("hexforge.debug")) {
                ex.printStackTrace(cmd.getErr());
            }
            return 1;
        });
        try {
            return cl.execute(args);
        } catch (OutOfMemoryError e) {
            // the passes refuse up front what their estimate says will not fit; this is what no estimate foresaw
            System.err.printf("hexforge: error: the Java heap (%s) ran out: %s%n", MemoryPlan.gb(Runtime.getRuntime().maxMemory()),
                    e.getMessage());
            System.err.println("hexforge: OUT_OF_MEMORY: run with more heap (bin/hexforge gives 3/4 of the memory available at "
                    + "launch; a -Xmx in HEXFORGE_JAVA_OPTS overrides it), or free memory; the output folder was left as it was");
            return 1;
        }
    }

    private static String describe(Throwable ex) {
        String msg = ex.getMessage();
        if (msg == null || msg.isBlank()) {
            return ex.getClass().getSimpleName();
        }
        return msg;
    }

    @Override
    public void run() {
        new CommandLine(this).usage(System.out);
    }
}
