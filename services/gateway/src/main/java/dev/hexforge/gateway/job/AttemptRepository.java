package dev.hexforge.gateway.job;

import jakarta.persistence.QueryHint;
import org.hibernate.jpa.HibernateHints;
import org.springframework.data.domain.Pageable;
import org.springframework.data.jpa.repository.JpaRepository;
import org.springframework.data.jpa.repository.Query;
import org.springframework.data.jpa.repository.QueryHints;

import java.time.Instant;
import java.util.List;
import java.util.UUID;

public interface AttemptRepository extends JpaRepository<AttemptEntity, UUID> {
    List<AttemptEntity> findByJobIdOrderByStartedAtAsc(UUID jobId);

    /**
     * How many attempts of a stage the job has in the database. It does not flush the transaction's pending changes
     * first (they cannot change the count: a transaction dispatches at most one attempt), so the job's row is written
     * once, at commit, rather than once before this query and again after it.
     */
    @QueryHints(@QueryHint(name = HibernateHints.HINT_FLUSH_MODE, value = "COMMIT"))
    long countByJobIdAndStage(UUID jobId, String stage);

    List<AttemptEntity> findByStateAndUpdatedAtBefore(AttemptEntity.State state, Instant before);

    /** A tenant's attempts of one stage in one state, newest first. */
    @Query("select a from AttemptEntity a, JobEntity j where a.jobId = j.id"
            + " and j.tenant = :tenant and a.stage = :stage and a.state = :state order by a.finishedAt desc")
    List<AttemptEntity> findForTenant(String tenant, String stage, AttemptEntity.State state, Pageable page);
}
