# make ARCH=aarch64: the library, the command and the C test programs for aarch64
# (NVIDIA Jetson), in build-aarch64. On an x86-64 machine they are cross-built with
# Debian's aarch64-linux-gnu-gcc against the arm64 multiarch libraries (make
# deps-aarch64) and run under qemu-aarch64 (test/test_aarch64.py); on an aarch64
# machine the same make builds natively. The Makefile reads this file twice: first,
# before anything else, for the build directory and the compiler; then with the
# other mk/*.mk, for its rules.
ifndef NVS_AARCH64_SETTINGS
NVS_AARCH64_SETTINGS := read

HOST_ARCH := $(shell uname -m)
AARCH64_BUILD ?= build-aarch64
AARCH64_CC ?= aarch64-linux-gnu-gcc
# The arm64 libraries the aarch64 programs link (make deps-aarch64), and its C library.
AARCH64_LIBRARIES := $(addprefix /usr/lib/aarch64-linux-gnu/,libusb-1.0.so libsqlite3.so libz.so) \
                     /lib/ld-linux-aarch64.so.1
# The C test programs make test builds for aarch64 and runs under qemu: the library's and
# the command's unit tests, the clock's, and the rigs of the end-to-end cases.
AARCH64_TEST_PROGRAMS = $(BUILD)/nvtxshim $(BUILD)/test/test_config $(BUILD)/test/test_error_names \
                        $(BUILD)/test/test_error_names_before_2_32 $(BUILD)/test/test_capture \
                        $(BUILD)/test/test_trace_json $(BUILD)/test/test_cli_trace_json \
                        $(BUILD)/test/test_figures $(BUILD)/test/test_clock $(BUILD)/test/rig_tally \
                        $(BUILD)/test/clock_agree

ifeq ($(ARCH),aarch64)
BUILD ?= $(AARCH64_BUILD)
ARCH_PROGRAMS = $(AARCH64_TEST_PROGRAMS)
# make wheel ARCH=aarch64: scripts/wheel.sh builds the manylinux_2_28_aarch64 wheel.
export NVS_WHEEL_ARCH := aarch64
ifneq ($(HOST_ARCH),aarch64)
ifeq ($(origin CC),default)
CC := $(AARCH64_CC)
endif
LIBUSB_CFLAGS ?= $(shell aarch64-linux-gnu-pkg-config --cflags libusb-1.0 2>/dev/null || echo -I/usr/include/libusb-1.0)
# The probe's vmlinux.h comes from the running kernel's BTF, which is this machine's.
ifeq ($(origin KERNEL_PROBE),undefined)
KERNEL_PROBE := no
NO_PROBE_LINE := libnvtxshim: built for aarch64 without the kernel probe (its vmlinux.h comes from the running kernel's BTF, and this kernel is $(HOST_ARCH)'s: make on the aarch64 machine for the probe)
endif
endif
endif

else
# ---- the rules (the second reading) ----------------------------------------------------------

# The recorder's clock on its own (test/unit/test_clock.c): reads against CLOCK_MONOTONIC, on
# the TSC or the generic timer, on every architecture.
TEST_PROGRAMS += $(BUILD)/test/test_clock
$(BUILD)/test/test_clock: test/unit/test_clock.c $(BUILD)/obj/clock.o $(call flags,program) $(DEPFILE)
	$(call say,CC)
	$(Q)$(CC) $(PROGRAM_CFLAGS) $(DEPFLAGS) $(TABLE_FLAGS) -Ilibnvtxshim $< $(BUILD)/obj/clock.o -o $@ -ldl

# The rig of the end-to-end case (test/programs/rig_tally.c): NVTX-free, libusb.
TEST_PROGRAMS += $(BUILD)/test/rig_tally

.PHONY: deps-aarch64 aarch64-programs
# The cross tools and the arm64 libraries (scripts/deps-aarch64.sh). make test runs it; where
# it cannot install them, test/test_aarch64.py skips, saying why.
deps-aarch64:
	$(Q)scripts/deps-aarch64.sh || echo "deps-aarch64: the aarch64 tools could not be installed: test/test_aarch64.py will skip"

# make test's aarch64 build, in AARCH64_BUILD, where the cross compiler is here.
aarch64-programs:
ifeq ($(HOST_ARCH),aarch64)
	@echo "aarch64: this machine is aarch64: the suite tests the native build"
else
	$(Q)missing=; command -v $(AARCH64_CC) >/dev/null 2>&1 || missing=" $(AARCH64_CC)"; \
	for library in $(AARCH64_LIBRARIES); do [ -e "$$library" ] || missing="$$missing $$library"; done; \
	if [ -z "$$missing" ]; then \
	  $(MAKE) --no-print-directory ARCH=aarch64 BUILD=$(AARCH64_BUILD) CC=$(AARCH64_CC) programs; \
	else \
	  echo "aarch64: no$$missing (make deps-aarch64): test/test_aarch64.py will skip"; \
	fi
endif
endif
