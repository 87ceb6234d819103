# libnvtxshim — see README.md. `make V=1` shows the commands.
.DEFAULT_GOAL := all
SHELL := /bin/bash
# A recipe that fails leaves no half-written target that would look up to date.
.DELETE_ON_ERROR:

BUILD ?= build
PREFIX ?= /usr/local
CC ?= cc
PYTHON ?= /usr/bin/python3

# NVTX3 is header-only and is never vendored: take the installed one.
NVTX_INCLUDE ?= $(firstword $(foreach dir,$(if $(CUDA_HOME),$(CUDA_HOME)/include) /usr/local/cuda/include /usr/include,\
                  $(if $(wildcard $(dir)/nvtx3/nvToolsExt.h),$(dir))))
# cuda.h (driver API) likewise; its CUDA_VERSION decides which entry points exist.
CUDA_INCLUDE ?= $(firstword $(foreach dir,$(if $(CUDA_HOME),$(CUDA_HOME)/include) /usr/local/cuda/include /usr/include,\
                  $(if $(wildcard $(dir)/cuda.h),$(dir))))
CUDA_VERSION_NUMBER := $(if $(CUDA_INCLUDE),$(shell sed -n 's/^\#define CUDA_VERSION \([0-9]*\).*/\1/p' $(CUDA_INCLUDE)/cuda.h))
LIBUSB_CFLAGS ?= $(shell pkg-config --cflags libusb-1.0 2>/dev/null || echo -I/usr/include/libusb-1.0)

ifeq ($(V),1)
Q :=
else
Q := @
endif

# $(call say,TAG): every recipe's first line. Makes the target's directory and,
# unless V=1, prints "  TAG     target".
say = @mkdir -p $(@D)$(if $(Q),; printf '  %-7s %s\n' '$(1)' '$@')

# Every compile of a C file writes TARGET.d, the project headers it read (and
# -MP: each as a target of its own, so that deleting one is no error); they are
# read back at the end of this file, and touching a header rebuilds exactly what
# includes it. One C file per command, so that its dependency file is complete:
# a program made of several is linked from objects. Each compile rule lists
# $(DEPFILE) too: a target without its dependency file (one built before there
# were any) is rebuilt. Only the file's absence counts, not its time: clang
# writes it after the object.
DEPFLAGS = -MMD -MP -MF $@.d -MT $@
.SECONDEXPANSION:
DEPFILE = $$(if $$(wildcard $$@.d),,FORCE)
.PHONY: FORCE

# WARNINGS for every compile; BASE_WARNINGS (no -Wmissing-prototypes) where
# functions are defined for others to call that no header of the project
# declares: the tests' stand-in libraries.
BASE_WARNINGS := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes
WARNINGS := $(BASE_WARNINGS) -Wmissing-prototypes
CFLAGS ?= -O2 -g
TABLE_FLAGS := -DNVS_CUDA_VERSION=$(CUDA_VERSION_NUMBER)
# NVTX_NO_IMPL: NVTX's inline implementation (a table of 146 function pointers,
# relocated at load) goes into emit.c alone, the one file that makes NVTX calls;
# a copy in every file that includes the header cost 1,100 relocations at load.
LIB_CFLAGS := $(CFLAGS) -std=gnu11 -fPIC -fvisibility=hidden -pthread $(WARNINGS) -DNVTX_NO_IMPL \
              -isystem $(NVTX_INCLUDE) -isystem $(CUDA_INCLUDE) $(LIBUSB_CFLAGS) $(TABLE_FLAGS)
# -Bsymbolic-functions: the library's references to its own wrappers (the hook
# table, execl -> execv) bind inside it; --no-undefined: nothing from libusb.
LIB_LDFLAGS := -shared -Wl,--version-script=$(BUILD)/exports.map -Wl,-Bsymbolic-functions \
               -Wl,--no-undefined -Wl,-z,noexecstack
# libc alone (glibc 2.34 took libdl and libpthread in; --as-needed drops them
# where they are stubs): the library loads into every process that inherits
# LD_PRELOAD and must cost nothing there. libbpf is opened only for the probe.
LIB_LIBS := -Wl,--as-needed -ldl -lpthread

LIB_SOURCES := $(filter-out %.bpf.c,$(wildcard libnvtxshim/*.c)) $(wildcard libnvtxshim/hooks/*.c)
LIB_OBJECTS := $(patsubst libnvtxshim/%.c,$(BUILD)/obj/%.o,$(LIB_SOURCES))
# The configuration parser (config.c, and names.c for call:NAME) is compiled once,
# for the library; the command and the unit test link the same objects
# (position-independent code links into programs too).
CONFIG_OBJECTS := $(BUILD)/obj/config.o $(BUILD)/obj/hooks/names.o

# The kernel probe (NVTXSHIM_KERNEL=on) needs libbpf, bpftool, clang and the
# kernel's BTF at build time; without them the library is built without it.
BPFTOOL ?= $(firstword $(shell command -v bpftool 2>/dev/null) $(wildcard /usr/sbin/bpftool /sbin/bpftool))
CLANG ?= $(shell command -v clang 2>/dev/null)
VMLINUX_BTF ?= /sys/kernel/btf/vmlinux
BPF_ARCH := $(patsubst x86_64,x86,$(patsubst aarch64,arm64,$(shell uname -m)))
KERNEL_PROBE := $(if $(and $(BPFTOOL),$(CLANG),$(wildcard $(VMLINUX_BTF)),\
                  $(shell pkg-config --exists libbpf 2>/dev/null && echo yes)),yes)
ifeq ($(KERNEL_PROBE),yes)
LIB_CFLAGS += -DNVS_KERNEL_PROBE -I$(BUILD)/kernel
# Generated: it must exist before kernel.c's first compile.
$(BUILD)/obj/kernel.o: $(BUILD)/kernel/kernel.skel.h
endif

.PHONY: all deps test demo install clean check-nvtx
all: check-nvtx $(BUILD)/libnvtxshim.so
	@$(if $(KERNEL_PROBE),,echo "libnvtxshim: built without the kernel probe (it needs libbpf, bpftool, clang and $(VMLINUX_BTF): make deps, then make clean all)")

# The probe: vmlinux.h from this kernel's BTF (CO-RE makes the object portable),
# the BPF object, and its skeleton, which embeds the object in the library.
$(BUILD)/kernel/vmlinux.h:
	$(call say,GEN)
	$(Q)$(BPFTOOL) btf dump file $(VMLINUX_BTF) format c > $@.tmp && mv $@.tmp $@

$(BUILD)/kernel/kernel.bpf.o: libnvtxshim/kernel.bpf.c $(BUILD)/kernel/vmlinux.h $(DEPFILE)
	$(call say,BPF)
	$(Q)$(CLANG) -g -O2 -target bpf -D__TARGET_ARCH_$(BPF_ARCH) -I$(BUILD)/kernel -Ilibnvtxshim \
	  $(DEPFLAGS) -c $< -o $@

$(BUILD)/kernel/kernel.skel.h: $(BUILD)/kernel/kernel.bpf.o
	$(call say,GEN)
	$(Q)$(BPFTOOL) gen skeleton $< name nvs_kernel > $@.tmp && mv $@.tmp $@

check-nvtx:
	@if [ -z "$(NVTX_INCLUDE)" ] || [ -z "$(CUDA_VERSION_NUMBER)" ]; then \
	  echo "nvtx3/nvToolsExt.h and cuda.h are needed from \$$CUDA_HOME/include, /usr/local/cuda/include or /usr/include: run 'make deps'" >&2; exit 1; fi

# The version script, from the hook tables.
$(BUILD)/exports.map: libnvtxshim/exports.map.in $(DEPFILE)
	$(call say,GEN)
	$(Q)$(CC) -E -P -x c $(TABLE_FLAGS) -Ilibnvtxshim $(DEPFLAGS) $< -o $@

$(BUILD)/obj/%.o: libnvtxshim/%.c $(DEPFILE)
	$(call say,CC)
	$(Q)$(CC) $(LIB_CFLAGS) $(DEPFLAGS) -c $< -o $@

$(BUILD)/libnvtxshim.so: $(LIB_OBJECTS) $(BUILD)/exports.map
	$(call say,LD)
	$(Q)$(CC) $(LIB_LDFLAGS) $(LIB_OBJECTS) -o $@ $(LIB_LIBS)

PROGRAM_CFLAGS := $(CFLAGS) -std=gnu11 -pthread $(WARNINGS) $(LIBUSB_CFLAGS)

# Targets beyond the library (the command, the test programs, bench, sanitizers,
# fuzz, soak) live in mk/*.mk; each may add to TEST_PROGRAMS, which make test
# builds, and to NESTED_BUILDS, build directories inside $(BUILD) made by a make
# of their own.
TEST_PROGRAMS :=
NESTED_BUILDS :=
-include $(sort $(wildcard mk/*.mk))

deps:
	$(Q)scripts/deps.sh

# deps first, then a fresh make: what deps installed (libbpf, nvcc, the NVTX
# headers) changes what this Makefile finds when it is read.
test: deps
	$(Q)$(MAKE) --no-print-directory all $(TEST_PROGRAMS)
	$(Q)$(PYTHON) -m pytest -q test/ -p no:cacheprovider
	$(Q)$(MAKE) --no-print-directory test-asan

demo: deps
	$(Q)$(MAKE) --no-print-directory all $(BUILD)/harness_physical $(BUILD)/emucam \
	  $(BUILD)/test/stub/libcuda.so.1 $(BUILD)/test/libemuv4l2.so
	$(Q)scripts/demo.sh

install: all
	install -d $(DESTDIR)$(PREFIX)/lib
	install -m 0755 $(BUILD)/libnvtxshim.so $(DESTDIR)$(PREFIX)/lib/libnvtxshim.so

clean:
	rm -rf $(BUILD)

# make -j clean all: the removal first, never beside the build.
ifneq ($(filter clean,$(MAKECMDGOALS)),)
.NOTPARALLEL:
endif

# The dependency files of this build (those of the nested builds are theirs).
-include $(shell find $(BUILD) $(foreach dir,$(NESTED_BUILDS),-path $(dir) -prune -o) \
           -type f -name '*.d' -print 2>/dev/null)
