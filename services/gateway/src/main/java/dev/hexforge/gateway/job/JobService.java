package dev.hexforge.gateway.job;

import dev.hexforge.checkpoint.ModelConfig;
import dev.hexforge.contracts.Capabilities;
import dev.hexforge.contracts.ContractsJson;
import dev.hexforge.contracts.DeviceMessages;
import dev.hexforge.contracts.InputPolicy;
import dev.hexforge.contracts.InvalidJobSpecException;
import dev.hexforge.contracts.JobSpec;
import dev.hexforge.contracts.JobSpecReader;
import dev.hexforge.contracts.Problem;
import dev.hexforge.contracts.Stage;
import dev.hexforge.contracts.StageEvents.ArtifactRef;
import dev.hexforge.contracts.StageEvents;
import dev.hexforge.contracts.Topics;
import dev.hexforge.gateway.artifact.ArtifactServiceClient;
import dev.hexforge.gateway.config.GatewayProperties;
import dev.hexforge.gateway.device.DeviceService;
import dev.hexforge.gateway.outbox.Outbox;
import dev.hexforge.gateway.upload.UploadEntity;
import dev.hexforge.gateway.upload.UploadRepository;
import dev.hexforge.gateway.upload.UploadService;
import dev.hexforge.memory.MemoryPlan;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.stereotype.Service;
import org.springframework.transaction.annotation.Transactional;

import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;

/**
 * The job state machine. Every transition and the stage request it causes are written in one transaction (the
 * request goes to the outbox), so no request leaves without its row and no row exists without its request.
 */
@Service
public class JobService {
    private static final Logger LOG = LoggerFactory.getLogger(JobService.class);
    private final JobRepository jobs;
    private final AttemptRepository attempts;
    private final Outbox outbox;
    private final Capabilities capabilities;
    private final UploadRepository uploads;
    private final DeviceService devices;
    private final InputPolicy policy;
    private final ArtifactServiceClient artifacts;
    private final int maxSequence;
    /** Artifact kinds that are Hugging Face model folders, so a job can start from them. */
    private static final Set<String> MODEL_KINDS = Set.of("hf-model", "quantized-checkpoint");

    /** The heap of the smallest stage service (hexforge.worker-memory), 0 when the deployment does not say. */
    private final long workerMemory;
    private final ServiceMemory serviceMemory;
    private final SubmissionTimings timings;
    private final ModelConfigCache configs = new ModelConfigCache(256);

    JobService(JobRepository jobs, AttemptRepository attempts, Outbox outbox, Capabilities capabilities,
               UploadRepository uploads, DeviceService devices, InputPolicy policy,
               ArtifactServiceClient artifacts, GatewayProperties settings, ServiceMemory serviceMemory,
               SubmissionTimings timings) {
        this.timings = timings;
        this.workerMemory = settings.workerMemory().toBytes();
        this.serviceMemory = serviceMemory;
        this.policy = policy;
        this.artifacts = artifacts;
        this.maxSequence = settings.limits().maxSequence();
        this.devices = devices;
        this.uploads = uploads;
        this.jobs = jobs;
        this.attempts = attempts;
        this.outbox = outbox;
        this.capabilities = capabilities;
    }

    /** Validates (every problem at once), checks this fleet can run it, and dispatches the first stage. */
    @Transactional
    public JobEntity submit(String body, String tenant) {
        long checking = System.nanoTime();
        long checkingCpu = SubmissionTimings.threadCpuNanos();
        JobSpec spec = JobSpecReader.read(body);
        capabilities.require(spec);
        if (spec.stageList().contains(Stage.BENCHMARK)) {
            List<Problem> missing = spec.benchmark().backends().stream().filter(b -> !devices.offers(tenant, b))
                    .map(b -> new Problem("benchmark.backends", "none of your device runners offers '" + b
                            + "'; add one with `hexforge device add NAME` and start `hexforge-device-runner serve` on the device"))
                    .toList();
            if (!missing.isEmpty()) {
                throw new InvalidJobSpecException(missing);
            }
        }
        List<Problem> problems = new ArrayList<>();
        ModelInput model = modelInput(spec.model(), tenant, problems);
        List<ArtifactRef> inputs = new ArrayList<>(model.refs());
        checkLimits(spec, problems);
        Set<String> firstReads = dataFields(spec.stageList().get(0));
        namedFiles(spec).forEach((field, input) -> { // every file named is checked, read by a stage of this job or not
            if (input == null) {
                return;
            }
            if (input.path() != null) {
                checkPath(field + ".path", input.path(), false, problems);
            } else {
                upload(field + ".upload", input.upload(), tenant, false, problems).filter(u -> firstReads.contains(field))
                        .map(u -> fileRef(field, u)).ifPresent(inputs::add);
            }
        });
        if (problems.isEmpty() && model.folder() != null && (workerMemory > 0 || serviceMemory.heard())) {
            checkMemory(spec, model.folder(), problems);
        }
        if (!problems.isEmpty()) {
            throw new InvalidJobSpecException(problems);
        }
        timings.record(System.nanoTime() - checking, SubmissionTimings.threadCpuNanos() - checkingCpu);
        String modelName = model.name();
        Instant now = Instant.now();
        JobEntity j = new JobEntity();
        j.id = UUID.randomUUID();
        j.tenant = tenant;
        j.name = spec.name() != null ? spec.name() : modelName.length() > 200 ? modelName.substring(0, 200) : modelName;
        j.spec(spec);
        j.state = JobEntity.State.RUNNING;
        j.createdAt = now;
        j.updatedAt = now;
        j = jobs.save(j); // merge (the id is assigned): keep working on the managed instance
        dispatch(j, spec, spec.stageList().get(0), inputs);
        LOG.info("job {} submitted: stages {}", j.id, spec.stages());
        return j;
    }

    /** The job's base model as the stage input its first attempt was given (an upload or an artifact); none for a path. */
    private List<ArtifactRef> baseModel(JobEntity j) {
        return attempts.findByJobIdOrderByStartedAtAsc(j.id).stream().findFirst()
                .map(a -> Arrays.stream(ContractsJson.read(a.inputs, ArtifactRef[].class))
                        .filter(i -> i.kind().equals(StageEvents.MODEL_ARCHIVE) || i.kind().equals(StageEvents.BASE_MODEL)).toList())
                .orElse(List.of());
    }

    /** The base model as a stage input: the tenant's upload or artifact; a server path is checked and passed in the spec. */
    /** The base model as stage inputs, and the name a job without one of its own takes from it. */
    /** @param folder a model path as resolved under the input roots; null for uploads, artifacts and refused paths */
    private record ModelInput(List<ArtifactRef> refs, String name, Path folder) {
    }

    private ModelInput modelInput(JobSpec.Input model, String tenant, List<Problem> problems) {
        if (model.upload() != null) { // looked up once: its row gives the input and the job's name
            return upload("model.upload", model.upload(), tenant, true, problems)
                    .map(u -> new ModelInput(List.of(new ArtifactRef(u.id.toString(), StageEvents.MODEL_ARCHIVE, u.sha256, u.size, u.objectKey)),
                            u.name, null))
                    .orElse(new ModelInput(List.of(), "model", null));
        }
        if (model.artifact() != null) {
            Map<String, Object> a;
            try {
                a = artifacts.get(u -> u.path("/internal/v1/artifacts/{id}").queryParam("tenant", "{tenant}")
                        .build(Map.of("id", model.artifact(), "tenant", tenant)));
            } catch (ArtifactServiceClient.ArtifactServiceException e) {
                if (e.status == 404) {
                    problems.add(new Problem("model.artifact", "no artifact '" + model.artifact() + "'"));
                    return new ModelInput(List.of(), "model", null);
                }
                throw e;
            }
            if (!MODEL_KINDS.contains(String.valueOf(a.get("kind")))) {
                problems.add(new Problem("model.artifact", "artifact '" + model.artifact() + "' is a "
                        + a.get("kind") + ", not a model folder (" + String.join(", ", new TreeSet<>(MODEL_KINDS)) + ")"));
                return new ModelInput(List.of(), "model", null);
            }
            return new ModelInput(List.of(new ArtifactRef(model.artifact(), StageEvents.BASE_MODEL, String.valueOf(a.get("sha256")),
                    ((Number) a.get("size")).longValue(), null)), "artifact " + model.artifact(), null);
        }
        Path folder = checkPath("model.path", model.path(), true, problems);
        String last = model.path().substring(model.path().lastIndexOf('/') + 1);
        return new ModelInput(List.of(), last.isEmpty() ? model.path() : last, folder);
    }

    /** The path resolved under the input roots, or null with the problem added. */
    private Path checkPath(String field, String path, boolean folder, List<Problem> problems) {
        try {
            return policy.resolve(field, path, folder);
        } catch (InputPolicy.RefusedPathException e) {
            problems.add(e.problem());
            return null;
        }
    }

    /** Files the job names, by field (null where not given). */
    private static Map<String, JobSpec.Input> namedFiles(JobSpec spec) {
        Map<String, JobSpec.Input> m = new LinkedHashMap<>();
        m.put("finetune.data", spec.finetune().data());
        m.put("finetune.evalData", spec.finetune().evalData());
        m.put("quantize.calibration", spec.quantize().calibration());
        return m;
    }

    /** The fields naming the data files a stage reads. */
    private static Set<String> dataFields(Stage stage) {
        return switch (stage) {
            case FINETUNE -> Set.of("finetune.data", "finetune.evalData");
            case QUANTIZE -> Set.of("quantize.calibration");
            default -> Set.of();
        };
    }

    private static ArtifactRef fileRef(String field, UploadEntity u) {
        return new ArtifactRef(u.id.toString(), StageEvents.inputKind(field, UploadService.extensionOf(u.format)), u.sha256, u.size,
                u.objectKey);
    }

    /** The uploaded data files a later stage reads, as its inputs (checked at submission; paths travel in the spec). */
    private List<ArtifactRef> dataInputs(JobSpec spec, Stage stage, String tenant) {
        List<ArtifactRef> out = new ArrayList<>();
        namedFiles(spec).forEach((field, input) -> {
            if (input != null && input.upload() != null && dataFields(stage).contains(field)) {
                uploads.findByIdAndTenant(UUID.fromString(input.upload()), tenant).ifPresent(u -> out.add(fileRef(field, u)));
            }
        });
        return out;
    }

    /**
     * A job whose model no stage service can hold is refused now, with the estimate, rather than failing with
     * OUT_OF_MEMORY after it waited its turn (the stage refuses it too, before its work, for inputs read only there).
     */
    private void checkMemory(JobSpec spec, Path folder, List<Problem> problems) {
        ModelConfig config;
        try {
            config = configs.read(folder);
        } catch (RuntimeException e) { // an unreadable config fails the first stage with MODEL_INVALID and its message
            return;
        }
        for (MemoryPlan.Estimate e : JobMemory.of(spec, config)) {
            OptionalLong reported = serviceMemory.heapOf(e.stage());
            long limit = reported.orElse(workerMemory);
            if (limit > 0 && e.heap() > limit) {
                problems.add(new Problem(e.stage().id(), e.describe() + "; this fleet's " + e.stage().id()
                        + " services can have " + MemoryPlan.gb(limit)
                        + (reported.isPresent() ? " (as they report it)" : " (hexforge.worker-memory)")));
            }
        }
    }

    /** Sequence lengths this deployment allows (attention memory grows with their square), and the model's own limits. */
    private void checkLimits(JobSpec spec, List<Problem> problems) {
        if (spec.stageList().contains(Stage.FINETUNE) && spec.finetune().maxLength() > maxSequence) {
            problems.add(new Problem("finetune.maxLength", "must be at most " + maxSequence
                    + " on this fleet (hexforge.limits.max-sequence), got " + spec.finetune().maxLength()));
        }
        if (spec.stageList().contains(Stage.QUANTIZE) && spec.quantize().calibrationLength() > maxSequence) {
            problems.add(new Problem("quantize.calibrationLength", "must be at most " + maxSequence
                    + " on this fleet (hexforge.limits.max-sequence), got " + spec.quantize().calibrationLength()));
        }
    }

    /** One of the tenant's uploads, of the expected sort (a model archive or a data file). */
    private Optional<UploadEntity> upload(String field, String id, String tenant, boolean archive, List<Problem> problems) {
        Optional<UploadEntity> u = uploads.findByIdAndTenant(UUID.fromString(id), tenant);
        if (u.isEmpty()) {
            problems.add(new Problem(field, "no upload '" + id + "'; " + (archive
                    ? "upload the model first (POST /api/v1/uploads or `hexforge upload DIR`)"
                    : "upload the file first (POST /api/v1/uploads?name=FILE.jsonl)")));
        } else if (UploadService.isDataFormat(u.get().format) == archive) {
            problems.add(new Problem(field, "upload '" + id + "' is a " + u.get().format + (archive
                    ? " file, not a model archive" : " model archive, not a data file (.json, .jsonl or .txt)")));
            return Optional.empty();
        }
        return u;
    }

    private void dispatch(JobEntity j, JobSpec spec, Stage stage, List<ArtifactRef> inputs) {
        Instant now = Instant.now();
        int earlier = (int) attempts.countByJobIdAndStage(j.id, stage.id());
        AttemptEntity a = attempts.save(JobStateMachine.dispatch(j, stage, earlier, ContractsJson.write(inputs), now));
        if (stage == Stage.BENCHMARK) { // device runners pull these over REST; no stage service consumes them
            JobSpec.Benchmark b = spec.benchmark();
            devices.queue(a.id, j.id, j.tenant, new DeviceMessages.BenchmarkTask(a.id.toString(), j.id.toString(),
                    inputs.isEmpty() ? null : inputs.get(0).id(), b.backends(), b.promptLength(), b.newTokens()),
                    DeviceService.selectorOf(b.device()));
            return;
        }
        outbox.add(Topics.requests(stage), j.id.toString(), new StageEvents.StageRequest(StageEvents.SCHEMA_VERSION, j.id.toString(),
                a.id.toString(), j.tenant, stage, spec, inputs, now));
    }

    /**
     * Applies a stage service's event and returns the job as it is after it; events of attempts that are no longer
     * current are ignored (null).
     */
    @Transactional
    public JobEntity apply(StageEvents.Event e) {
        Optional<AttemptEntity> found = attempts.findById(UUID.fromString(e.attemptId()));
        Optional<JobEntity> job = jobs.findById(UUID.fromString(e.jobId()));
        if (found.isEmpty() || job.isEmpty()) {
            LOG.warn("event for unknown attempt {} of job {} ignored", e.attemptId(), e.jobId());
            return null;
        }
        AttemptEntity a = found.get();
        JobEntity j = job.get();
        JobSpec spec = e instanceof StageEvents.Completed ? j.spec() : null; // progress is frequent
        JobStateMachine.Outcome outcome = JobStateMachine.apply(j, a, spec == null ? List.of() : spec.stageList(), e, Instant.now());
        if (!outcome.applied()) {
            LOG.info("event {} for superseded attempt {} of job {} ignored", e.getClass().getSimpleName(), a.id, j.id);
            return null;
        }
        if (e instanceof StageEvents.Completed c) {
            if (c.outputs() != null && !c.outputs().isEmpty()) { // for the catalogue, in this transaction
                outbox.add(Topics.ACCEPTED_OUTPUTS, j.id.toString(), c);
            }
            if (outcome.next() != null) {
                List<ArtifactRef> inputs = new ArrayList<>(c.outputs());
                if (outcome.next() == Stage.MERGE) { // the adapter, and the base model it is merged into
                    inputs.addAll(baseModel(j));
                }
                inputs.addAll(dataInputs(spec, outcome.next(), j.tenant));
                dispatch(j, spec, outcome.next(), inputs);
            } else {
                LOG.info("job {} completed", j.id);
            }
        } else if (e instanceof StageEvents.Failed f) {
            LOG.info("job {} failed at {}: {}", j.id, f.stage().id(), f.error().message());
        }
        return j;
    }

    /**
     * A stage event the gateway could not apply, after its retries: the job fails with EVENT_UNPROCESSABLE naming the
     * event and where it is kept, so nothing is dropped silently and the user can resume.
     */
    @Transactional
    public void unprocessable(StageEvents.Event e, String reason) {
        Optional<JobEntity> job;
        try {
            job = jobs.findById(UUID.fromString(e.jobId()));
        } catch (IllegalArgumentException ex) {
            return;
        }
        job.ifPresent(j -> {
            AttemptEntity a = attempts.findById(UUID.fromString(e.attemptId())).orElse(null);
            if (JobStateMachine.unprocessable(j, a, e, reason, Topics.STAGE_EVENTS_DEAD, Instant.now())) {
                cancelAttempt(j, j.currentAttempt); // a service still running it stops; its events would be ignored anyway
                LOG.warn("job {} failed: {}", j.id, j.error == null ? null : j.error.message);
            }
        });
    }

    @Transactional
    public JobEntity cancel(UUID id, String tenant) {
        JobEntity j = jobs.findByIdAndTenant(id, tenant).orElseThrow(() -> new JobNotFoundException(id));
        JobStateMachine.cancel(j, attempts.findById(j.currentAttempt).orElse(null), Instant.now());
        cancelAttempt(j, j.currentAttempt);
        LOG.info("job {} cancelled at {}", j.id, j.currentStage);
        return j;
    }

    /** Tells every stage service to stop the attempt (through the outbox, with the transaction). */
    private void cancelAttempt(JobEntity j, UUID attempt) {
        devices.cancel(attempt);
        outbox.add(Topics.CONTROL, j.id.toString(), new StageEvents.Cancel(StageEvents.SCHEMA_VERSION, j.id.toString(),
                attempt.toString(), Instant.now()));
    }

    /** Re-runs the stage that failed (or was cancelled), feeding it the outputs of the stage before it. */
    @Transactional
    public JobEntity resume(UUID id, String tenant) {
        JobEntity j = jobs.findByIdAndTenant(id, tenant).orElseThrow(() -> new JobNotFoundException(id));
        JobStateMachine.resume(j);
        AttemptEntity last = attempts.findById(j.currentAttempt).orElseThrow();
        List<ArtifactRef> inputs = List.of(ContractsJson.read(last.inputs, ArtifactRef[].class));
        dispatch(j, j.spec(), Stage.parse(last.stage), inputs);
        return j;
    }

    /**
     * An attempt that went silent (no progress, not even the service's heartbeat, for the stall timeout): its service
     * died or hangs. It is superseded by a new attempt of the same stage with the same inputs, unless the stage has had
     * {@code maxAttempts} already; then the job fails with the stall as its error.
     */
    @Transactional
    public boolean redispatchStalled(UUID attemptId, Duration silence, int maxAttempts) {
        AttemptEntity a = attempts.findById(attemptId).orElse(null);
        JobEntity j = a == null ? null : jobs.findById(a.jobId).orElse(null);
        if (j == null) {
            return false;
        }
        JobStateMachine.Stall stall = JobStateMachine.stalled(j, a, silence, maxAttempts, Instant.now());
        if (stall == JobStateMachine.Stall.NOT_CURRENT) {
            return false;
        }
        cancelAttempt(j, a.id); // should the silent service wake up, it stops instead of racing the next attempt
        if (stall == JobStateMachine.Stall.GAVE_UP) {
            LOG.info("job {} failed: {} stalled {} times", j.id, a.stage, a.attemptNo);
            return true;
        }
        LOG.info("job {}: {} attempt {} stalled; re-dispatching", j.id, a.stage, a.attemptNo);
        dispatch(j, j.spec(), Stage.parse(a.stage), List.of(ContractsJson.read(a.inputs, ArtifactRef[].class)));
        return true;
    }

    public JobEntity get(UUID id, String tenant) {
        return jobs.findByIdAndTenant(id, tenant).orElseThrow(() -> new JobNotFoundException(id));
    }

    public List<AttemptEntity> attempts(UUID jobId) {
        return attempts.findByJobIdOrderByStartedAtAsc(jobId);
    }
}
