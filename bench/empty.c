/* An empty preload library: what loading any preload library costs a process. */
void nvs_bench_empty(void);
void nvs_bench_empty(void) {}
