/* A "driver" that lacks most entry points: the backend must refuse it
 * clearly (an old or broken libcuda), not crash. */
__attribute__((visibility("default"))) int cuInit(unsigned flags) { return (int)flags; }
