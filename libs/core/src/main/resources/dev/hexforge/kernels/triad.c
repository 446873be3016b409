/* STREAM's triad a = b + 3c over three arrays of 2^24 floats (64 MB each), on N threads, best of 8 passes:
   the process-level baseline the efficiency figures divide by (MemoryBandwidth.measure) and `hexforge bench bandwidth`
   compares the JVM's triad with. Prints bytes/s. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define FLOATS (1L << 24)
static float *a, *b, *c;
static int threads;

static void *part(void *arg) {
    long t = (long) arg, from = FLOATS * t / threads, to = FLOATS * (t + 1) / threads;
    for (long i = from; i < to; i++) a[i] = b[i] + 3.0f * c[i];
    return NULL;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    threads = argc > 1 ? atoi(argv[1]) : 1;
    a = malloc(FLOATS * sizeof(float)); b = malloc(FLOATS * sizeof(float)); c = malloc(FLOATS * sizeof(float));
    for (long i = 0; i < FLOATS; i++) { a[i] = 0; b[i] = 1; c[i] = 2; }
    pthread_t ids[256];
    double best = 0;
    for (int rep = 0; rep < 8; rep++) {
        double t0 = now();
        for (long t = 0; t < threads; t++) pthread_create(&ids[t], NULL, part, (void *) t);
        for (long t = 0; t < threads; t++) pthread_join(ids[t], NULL);
        double bytes = 3.0 * FLOATS * sizeof(float) / (now() - t0);
        if (bytes > best) best = bytes;
    }
    printf("%.0f\n", best + a[FLOATS / 2] * 0);
    return 0;
}
