# Sanitizer builds and the runs that use them.
#
#   make test-asan   the library and every test program built with ASan+UBSan into
#                    $(BUILD)/asan, then the whole pytest suite against that build;
#                    any sanitizer report fails its test
#   $(BUILD)/tsan    the library and test/programs/stress.c built with TSan, for
#                    test/test_sanitizers.py (built by make test through TEST_PROGRAMS)
#
# The sanitizer flags go into CC, not CFLAGS: the Makefile links the library
# without CFLAGS, and the runtime must be linked there too. emucam and the
# stand-in CUDA driver are instrumented like everything else.

ASAN_BUILD := $(BUILD)/asan
TSAN_BUILD := $(BUILD)/tsan
NESTED_BUILDS += $(ASAN_BUILD) $(TSAN_BUILD)
# -Wno-maybe-uninitialized: with ASan at -O1 gcc 12 warns about values it cannot
# follow through the instrumentation (test/cuda/stub_libcuda.c: cuMemAllocHost_v2).
ASAN_CC := $(CC) -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all \
           -Wno-maybe-uninitialized
TSAN_CC := $(CC) -fsanitize=thread -Wno-maybe-uninitialized
SANITIZER_CFLAGS := -O1 -g
LIBASAN := $(shell $(CC) -print-file-name=libasan.so 2>/dev/null)

# The runtime options for the ASan suite. verify_asan_link_order=0: emucam puts
# umockdev's preload library in front of LD_PRELOAD, so libasan comes second
# there (it still precedes libc, which is what matters). Every report fails its
# process (exitcode) and, through test/sanitizers/report_check.py, its test.
ASAN_ENV = ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=1:halt_on_error=1:exitcode=86 \
           LSAN_OPTIONS=suppressions=$(abspath test/sanitizers/lsan.supp):print_suppressions=0 \
           UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:exitcode=87 \
           NVS_TEST_BUILD=$(patsubst $(abspath .)/%,%,$(abspath $(ASAN_BUILD))) NVS_TEST_PRELOAD_FIRST=$(LIBASAN) \
           PYTHONPATH=$(abspath test/sanitizers)

# Tests left out of the ASan run, each for a reason that is not the library's:
#  - test_build (in ASAN_UNINSTRUMENTED): the instrumented library links libasan and
#    libubsan, and exports the sanitizers' symbols; the default build is what that test
#    is about, and its Makefile tests make builds of their own: once is enough.
#  - test_hot_path: counts allocations with a malloc interposer, and libasan's
#    malloc, first in LD_PRELOAD, takes every call instead.
#  - test_demo: scripts/demo.sh runs the default build (build/), not this one.
#  - the two capture tests below start the harness through env(1) inside
#    test/nsys.py's own LD_PRELOAD wrapper, and test_xlib_ranges_in_the_nsys_export
#    preloads the shim into nsys itself: an uninstrumented process then loads the
#    instrumented shim without the ASan runtime in front of it, and dies as ASan
#    starts (SEGV at address 0, thread T-1). The other nsys tests run.
#  - test_a_compiler_run_is_unchanged: ld.bfd and its LTO plugin leak at exit, and
#    the plugin is unloaded by then, so its leaks have no module name to suppress.
#  - test_glxgears_swaps_and_frames: Mesa's DRI driver leaks and is unloaded before
#    exit: the same (stacks of "<unknown module>"). So do the GL upload tests (gl_upload,
#    also in test_transparency) and vkcube on lavapipe (test_vulkan_presents_...).
#  - cairo on an Xlib surface (the --xlib runs of cairo_draw): cairo 1.16's record of
#    the display, made by cairo_xlib_surface_create, is reported lost at exit, with or
#    without the shim, and its stacks end in libcairo. The XCB runs stay in.
#  - test_gtk_window_draws_through_render: GTK's D-Bus and GLib allocations live to
#    exit in the python host, and their stacks end in libdbus and libglib.
#  - test_inert_sweep: preloads the shim into every program in /usr/bin with an
#    environment of its own, without the ASan runtime in front (see above); it is
#    about the default build being inert.
#  - test_a_fatal_signal_leaves_every_event_so_far_readable[segv]: ASan catches the
#    program's deliberate SIGSEGV and reports it instead of dying by the signal.
#  - test_start_up_makes_the_system_calls_of_an_empty_preload_library: counts the
#    system calls of a start, and ASan's runtime makes its own there.
#  - the ffmpeg runs on the emulated V4L2 camera: ffmpeg (not built with ASan) dies by
#    SIGSEGV under ASan's runtime in some runs, with the camera double alone and no
#    shim (test_emuv4l2's run) as with it; OpenCV and v4l2-ctl cover the camera there.
#  - test_harness_rig_capture_to_actuation: needs a run whose clock reads come within 1 ms
#    of the harness's and the camera's, and under ASan's slowdown the harness falls behind
#    the frame rate in every one.
#  - test_pointers_and_counts_the_kernel_refuses_are_its_errors: the program passes poll,
#    select and readv bad pointers on purpose, and ASan's interceptors in the instrumented
#    program check them (and report) before the call reaches the library or the kernel.
#  - test_a_loop_sharing_its_cpu_with_a_busy_thread_waits_runnable: asks the
#    scheduler for preemptions in most frames, which ASan's slowdown changes; the
#    probe's code runs under ASan in the other kernel tests.
#  - a thread that forbids itself the TSC (clock_agree refuse): ASan's own allocator
#    reads clock_gettime through the vDSO, which then faults, shim or not.
#  - test_faults.py's mmap cases: ASan's runtime maps memory of its own (its allocator,
#    its shadow) from inside the instrumented library's calls, so the library's mmaps as
#    strace -k finds them include the runtime's, and a refused one is the runtime's fatal
#    "unable to mmap". Every other call is failed under ASan too (LeakSanitizer off under
#    strace, which it cannot run beside).
#  - test_wheel.py: the wheel is built by its own make (build/wheel), uninstrumented
#    whatever the run; the suite's first pass has run it.
#  - test_seccomp.py: measures the program's own system calls with strace and allows
#    only those and the user guide's list; ASan's runtime makes calls of its own
#    (LeakSanitizer stops the world at exit with clone and ptrace, and dies under
#    strace), and the guide's list is the uninstrumented library's.

# Tests that run nothing of the instrumented build, which the first half has run: the
# aarch64 build and its wheel under qemu (whose tree, build-aarch64/wheel, the first
# half is writing at the same time), the Makefile's own behaviour, and checks of the
# source (style, sizes, direction, tags, the documents' links).
ASAN_UNINSTRUMENTED := test_aarch64.py test_build.py test_style.py test_sizes.py \
                       test_direction.py test_tags.py test_docs.py
ASAN_DESELECT := $(addprefix --deselect test/,\
                   test_capture.py::test_frames_window_records_exactly_those_frames_and_their_calls \
                   test_capture.py::test_time_window_counts_from_the_first_hooked_call \
                   test_x11.py::test_xlib_ranges_in_the_nsys_export \
                   test_inert.py::test_a_compiler_run_is_unchanged \
                   test_inert.py::test_start_up_makes_the_system_calls_of_an_empty_preload_library \
                   test_x11.py::test_glxgears_swaps_and_frames \
                   test_x11.py::test_gl_ test_transparency.py::test_same_output_and_exit_code_with_and_without_the_shim[gl_upload \
                   test_x11.py::test_vulkan_presents_are_swaps_and_frames \
                   test_x11.py::test_cairo_draws_through_render[--xlib \
                   test_transparency.py::test_same_output_and_exit_code_with_and_without_the_shim[cairo_draw-xlib \
                   test_x11.py::test_gtk_window_draws_through_render \
                   test_process_life.py::test_a_fatal_signal_leaves_every_event_so_far_readable[segv] \
                   test_kernel.py::test_a_loop_sharing_its_cpu_with_a_busy_thread_waits_runnable \
                   test_emuv4l2.py::test_ffmpeg_output_is_the_same_twice \
                   test_devices.py::test_camera_clients_see_the_same_frames_and_the_trace_matches_the_camera[ffmpeg] \
                   test_devices.py::test_a_dqbuf_range_is_a_frame_handed_out[ffmpeg] \
                   test_devices.py::test_dropped_frames_are_red_marks[ffmpeg] \
                   test_devices.py::test_set_up_ranges_say_what_the_camera_granted[ffmpeg] \
                   test_harmless.py::test_pointers_and_counts_the_kernel_refuses_are_its_errors \
                   test_devices.py::test_harness_rig_capture_to_actuation \
                   test_clock.py::test_a_thread_that_forbids_itself_the_tsc \
                   test_transparency.py::test_same_output_and_exit_code_with_and_without_the_shim[clock_agree-refuse] \
                   test_faults.py::test_a_failed_call_of_the_recorder_never_harms_the_program_or_hides_a_loss[json-mmap] \
                   test_faults.py::test_a_failed_call_of_the_recorder_never_harms_the_program_or_hides_a_loss[pftrace-mmap]) \
                 --ignore test/test_inert_sweep.py \
                 --ignore test/test_hot_path.py --ignore test/test_demo.py \
                 --ignore test/test_wheel.py --ignore test/test_seccomp.py \
                 $(addprefix --ignore test/,$(ASAN_UNINSTRUMENTED))


# make test-asan ASAN_TESTS=test/test_usb.py: part of the suite.
ASAN_TESTS ?= test/

.PHONY: asan-programs test-asan tsan-programs
asan-programs:
	$(Q)$(MAKE) --no-print-directory BUILD=$(ASAN_BUILD) CC="$(ASAN_CC)" CFLAGS="$(SANITIZER_CFLAGS)" \
	  all $(patsubst $(BUILD)/%,$(ASAN_BUILD)/%,$(filter $(BUILD)/%,$(TEST_PROGRAMS)))

test-asan: asan-programs
	$(Q)env $(ASAN_ENV) $(PYTHON) -m pytest -q -rs --durations=15 $(ASAN_TESTS) -p no:cacheprovider -p report_check \
	  $(ASAN_DESELECT)

tsan-programs:
	$(Q)$(MAKE) --no-print-directory BUILD=$(TSAN_BUILD) CC="$(TSAN_CC)" CFLAGS="$(SANITIZER_CFLAGS)" \
	  $(TSAN_BUILD)/libnvtxshim.so $(TSAN_BUILD)/test/stress $(TSAN_BUILD)/test/test_capture

TEST_PROGRAMS += tsan-programs $(BUILD)/test/stress
