# make bench: what tracing a call costs, and the example harness's frame rate,
# measured in one run and printed as one table (bench/README.md).
# Knobs (environment): BENCH_QUICK=1 (a fast smoke run), BENCH_N, BENCH_R,
# BENCH_SKIP (comma list: calls,tools,harness,nsys,callgrind,starts,memory,convert,long),
# BENCH_ONLY (the parts to run alone), BENCH_STRICT=1 (fail on a target not met); the rest in
# bench/bench.py. make bench-long: the long traces alone.

BENCH_BUILD := $(BUILD)/bench
BENCH_SINK := $(BENCH_BUILD)/sink
# The stand-ins for the real libraries, under their real sonames: every
# function returns at once, so only the cost in front of it is measured.
BENCH_SINKS := $(BENCH_SINK)/libusb-1.0.so.0 $(BENCH_SINK)/libX11.so.6 $(BENCH_SINK)/libcuda.so.1
BENCH_PROGRAMS := $(BENCH_SINKS) $(BENCH_BUILD)/calls $(BENCH_BUILD)/libnull_tool.so \
                  $(BENCH_BUILD)/libwrite_time.so \
                  $(BENCH_BUILD)/starts $(BENCH_BUILD)/libempty.so $(BENCH_BUILD)/thread_memory
BENCH_SINK_FLAGS := $(CFLAGS) -std=gnu11 -shared -fPIC -fvisibility=hidden $(WARNINGS)

$(BENCH_SINK)/libusb-1.0.so.0: bench/sink_usb.c $(call flags,program) $(DEPFILE)
	$(call say,CC)
	$(Q)$(CC) $(BENCH_SINK_FLAGS) $(DEPFLAGS) $(LIBUSB_CFLAGS) -Wl,-soname,libusb-1.0.so.0 $< -o $@

$(BENCH_SINK)/libX11.so.6: bench/sink_x11.c $(call flags,program) $(DEPFILE)
	$(call say,CC)
	$(Q)$(CC) $(BENCH_SINK_FLAGS) $(DEPFLAGS) -Wl,-soname,libX11.so.6 $< -o $@

$(BENCH_SINK)/libcuda.so.1: bench/sink_cuda.c $(call flags,program) $(DEPFILE)
	$(call say,CC)
	$(Q)$(CC) $(BENCH_SINK_FLAGS) $(DEPFLAGS) -isystem $(CUDA_INCLUDE) -Wl,-soname,libcuda.so.1 $< -o $@

# Linked against the sinks themselves (found through its RUNPATH, never
# through LD_LIBRARY_PATH, so nsys never sees a stand-in libcuda).
$(BENCH_BUILD)/calls: bench/calls.c $(BENCH_SINKS) $(call flags,program) $(DEPFILE)
	$(call say,CC)
	$(Q)$(CC) $(PROGRAM_CFLAGS) $(DEPFLAGS) -isystem $(NVTX_INCLUDE) -isystem $(CUDA_INCLUDE) $< -o $@ \
	  -Wl,-rpath,'$$ORIGIN/sink' $(BENCH_SINKS) -ldl

# An NVTX tool that drops everything: the cost of the NVTX calls themselves.
$(BENCH_BUILD)/libnull_tool.so: bench/null_tool.c $(call flags,program) $(DEPFILE)
	$(call say,CC)
	$(Q)$(CC) $(BENCH_SINK_FLAGS) $(DEPFLAGS) -isystem $(NVTX_INCLUDE) $< -o $@

# The kernel's part of recording: the time inside the trace writer's pwrite
# and pwritev, preloaded after the shim.
$(BENCH_BUILD)/libwrite_time.so: bench/write_time.c $(call flags,program) $(DEPFILE)
	$(call say,CC)
	$(Q)$(CC) $(BENCH_SINK_FLAGS) $(DEPFLAGS) $< -o $@ -ldl

# The start-up row: a program started many times with no preload, with an empty
# preload library (the floor any preload library pays), and with the shim.
$(BENCH_BUILD)/starts: bench/starts.c $(call flags,program) $(DEPFILE)
	$(call say,CC)
	$(Q)$(CC) $(PROGRAM_CFLAGS) $(DEPFLAGS) $< -o $@

$(BENCH_BUILD)/libempty.so: bench/empty.c $(call flags,program) $(DEPFILE)
	$(call say,CC)
	$(Q)$(CC) $(CFLAGS) -shared -fPIC $(WARNINGS) $(DEPFLAGS) $< -o $@

# The memory row: N live threads that each recorded one range.
$(BENCH_BUILD)/thread_memory: bench/thread_memory.c $(call flags,program) $(DEPFILE)
	$(call say,CC)
	$(Q)$(CC) $(PROGRAM_CFLAGS) $(DEPFLAGS) -isystem $(NVTX_INCLUDE) $< -o $@ -ldl

.PHONY: bench bench-programs bench-long
bench-programs: all $(BUILD)/harness_physical $(BUILD)/emucam $(BUILD)/test/stub/libcuda.so.1 $(BENCH_PROGRAMS) \
                $(BUILD)/test/longtrace

# deps first, then a fresh make (as for test): deps may change what is found.
bench: deps
	$(Q)bench/deps.sh $(BENCH_BUILD)
	$(Q)$(MAKE) --no-print-directory bench-programs
	$(Q)$(PYTHON) bench/bench.py --build $(BUILD)

# The long traces' rows alone (report's memory and time on a 1 GB trace, top's views on a
# growing one): what they need is the command and the trace generator, not the tracers.
bench-long: all $(BUILD)/test/longtrace
	$(Q)BENCH_ONLY=long $(PYTHON) bench/bench.py --build $(BUILD)
