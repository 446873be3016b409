package dev.hexforge.lora.train;

/**
 * Linear warm-up from 0, then cosine or linear decay to 0, as Hugging Face's {@code get_*_schedule_with_warmup}:
 * the rate used by optimizer step {@code s} (0-based) is {@code peak · λ(s)}.
 */
public record LearningRateSchedule(double peak, int warmupSteps, int totalSteps, boolean cosine) {

    public static LearningRateSchedule of(TrainingOptions o, int totalSteps) {
        return new LearningRateSchedule(o.learningRate(), (int) Math.round(o.warmupRatio() * totalSteps), totalSteps,
                o.schedule().equals("cosine"));
    }

    public double at(int step) {
        if (step < warmupSteps) {
            return peak * step / Math.max(1, warmupSteps);
        }
        double progress = (double) (step - warmupSteps) / Math.max(1, totalSteps - warmupSteps);
        return cosine ? peak * Math.max(0, 0.5 * (1 + Math.cos(Math.PI * progress))) : peak * Math.max(0, 1 - progress);
    }
}
