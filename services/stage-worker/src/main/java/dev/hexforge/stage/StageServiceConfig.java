package dev.hexforge.stage;

import dev.hexforge.contracts.ContractsJson;
import dev.hexforge.contracts.InputPolicy;
import dev.hexforge.contracts.StageEvents;
import dev.hexforge.contracts.Topics;
import dev.hexforge.store.ArtifactStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.annotation.Qualifier;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.kafka.annotation.KafkaListenerConfigurer;
import org.springframework.kafka.config.ConcurrentKafkaListenerContainerFactory;
import org.springframework.kafka.config.MethodKafkaListenerEndpoint;
import org.springframework.kafka.core.ConsumerFactory;
import org.springframework.kafka.listener.ContainerProperties;
import org.springframework.kafka.support.Acknowledgment;
import org.springframework.messaging.handler.annotation.support.DefaultMessageHandlerMethodFactory;

import java.util.List;

/**
 * The beans every stage service needs besides Kafka: its settings ({@link StageServiceProperties}), the artifact store, the container
 * factory of stage-request listeners (offsets committed by the worker when an attempt ends), and the listener of
 * cancellations.
 */
@Configuration
@EnableConfigurationProperties(StageServiceProperties.class)
public class StageServiceConfig {
    /** Container factory name for stage-request listeners. */
    public static final String STAGE_REQUESTS = "stageRequests";

    @Bean
    ArtifactStore artifactStore(StageServiceProperties p) {
        return new ArtifactStore(p.s3().endpoint(), p.s3().publicEndpointOrEndpoint(), p.s3().accessKey(), p.s3().secretKey());
    }

    /** The server folders a job may name as inputs (none unless the operator lists them). */
    @Bean
    InputPolicy inputPolicy(StageServiceProperties p) {
        return InputPolicy.of(p.inputRoots(), p.inputDenied());
    }

    @Bean(STAGE_REQUESTS)
    ConcurrentKafkaListenerContainerFactory<String, String> stageRequests(ConsumerFactory<String, String> consumers) {
        ConcurrentKafkaListenerContainerFactory<String, String> f = new ConcurrentKafkaListenerContainerFactory<>();
        f.setConsumerFactory(consumers);
        f.getContainerProperties().setAckMode(ContainerProperties.AckMode.MANUAL);
        return f;
    }

    /**
     * Every stage worker's request listener, registered from its stage: topic {@link Topics#requests}, group
     * {@link Topics#requestGroup}, id {@code <stage>-requests}, offsets committed by the worker when an attempt ends.
     */
    @Bean
    KafkaListenerConfigurer stageListeners(List<StageWorker> workers,
            @Qualifier(STAGE_REQUESTS) ConcurrentKafkaListenerContainerFactory<String, String> factory,
            BeanFactory beans) {
        return registrar -> {
            DefaultMessageHandlerMethodFactory handlers =
                    new DefaultMessageHandlerMethodFactory();
            handlers.setBeanFactory(beans);
            handlers.afterPropertiesSet();
            for (StageWorker w : workers) {
                MethodKafkaListenerEndpoint<String, String> e =
                        new MethodKafkaListenerEndpoint<>();
                e.setId(w.listenerId());
                e.setTopics(Topics.requests(w.stage()));
                e.setGroupId(Topics.requestGroup(w.stage()));
                e.setBean(w);
                try {
                    e.setMethod(StageWorker.class.getMethod("submit", String.class, Acknowledgment.class));
                } catch (NoSuchMethodException x) {
                    throw new IllegalStateException(x);
                }
                e.setMessageHandlerMethodFactory(handlers);
                registrar.registerEndpoint(e, factory);
            }
        };
    }

    @Bean
    CancelListener cancelListener(List<StageWorker> workers) {
        return new CancelListener(workers);
    }

    /**
     * Cancellations reach every instance: each listens in a group of its own, from the latest message on (an attempt
     * cancelled before this instance started is caught by the marker the gateway leaves in storage).
     */
    static final class CancelListener {
        private static final Logger LOG = LoggerFactory.getLogger(CancelListener.class);
        private final List<StageWorker> workers;

        CancelListener(List<StageWorker> workers) {
            this.workers = workers;
        }

        @KafkaListener(topics = Topics.CONTROL, groupId = "hexforge-control-#{T(java.util.UUID).randomUUID()}",
                properties = "auto.offset.reset=latest")
        void onControl(String payload) {
            try {
                StageEvents.Cancel c = ContractsJson.read(payload, StageEvents.Cancel.class);
                workers.forEach(w -> w.cancel(c.attemptId()));
            } catch (IllegalArgumentException e) {
                LOG.warn("unreadable control message dropped: {}", e.getMessage());
            }
        }
    }
}
