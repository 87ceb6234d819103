# libnvtxshim — see README.md. `make V=1` shows the commands.
.DEFAULT_GOAL := all
SHELL := /bin/bash
# A recipe that fails leaves no half-written target that would look up to date.
.DELETE_ON_ERROR:

# make ARCH=aarch64: its build directory and compiler (mk/aarch64.mk), set first.
include mk/aarch64.mk
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

# What decides how a target is built beyond its sources - the compiler, the
# flags, what this Makefile found (the kernel probe's tools, nvcc, the headers'
# directories) - is a dependency of that target too. Each class of targets (one
# in FLAGS_CLASSES) has a file, $(call flags,CLASS) = $(BUILD)/flags/CLASS, that
# holds the text of FLAGS_CLASS (a recursive variable: its value once every
# mk/*.mk is read); the file is rewritten, and so made newer than the targets,
# only when that text changes. Every compile, generate and link rule lists its
# class's file (after its source, so that $< stays the source; a link rule that
# passes $^ filters it out). So make with other CFLAGS, another CC, or after make
# deps installed libbpf rebuilds exactly the targets whose commands change, and
# no others. Nested builds (sanitize.mk) keep their own files in their $(BUILD).
# The rule that writes the files is at the end of this file.
FLAGS_DIR = $(BUILD)/flags
flags = $(FLAGS_DIR)/$(1)
FLAGS_CLASSES :=

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
# The chain of frame pointers through the library: GCC on x86-64 made rbp one
# more register in the functions that keep no frame, so a profiler that walks
# frame pointers (perf -g, nsys --backtrace=fp) from inside a hooked library lost
# every frame of the program above the call. -ffixed-rbp keeps rbp out of the
# registers at no cost (callgrind, make bench): the walk passes the library's
# frames and goes on into the program's (docs/ARCHITECTURE.md). Where the
# compiler takes it: aarch64 keeps its frame records, and zig's clang (the
# wheel) keeps frame pointers.
FRAME_CHAIN_FLAGS := $(shell $(CC) -ffixed-rbp -Werror -S -x c /dev/null -o /dev/null >/dev/null 2>&1 && \
                       echo -ffixed-rbp)
LIB_CFLAGS := $(CFLAGS) -std=gnu11 -fPIC -fvisibility=hidden -pthread $(WARNINGS) -DNVTX_NO_IMPL \
              $(FRAME_CHAIN_FLAGS) -isystem $(NVTX_INCLUDE) -isystem $(CUDA_INCLUDE) $(LIBUSB_CFLAGS) \
              $(TABLE_FLAGS)
# -Bsymbolic: the library's references to its own wrappers (the hook table,
# execl -> execv) bind inside it (it exports functions alone, so this is
# -Bsymbolic-functions, which LLD, the wheel's linker, lacks); --no-undefined:
# nothing from libusb.
LIB_LDFLAGS := -shared -Wl,--version-script=$(BUILD)/exports.map -Wl,-Bsymbolic \
               -Wl,--no-undefined -Wl,-z,noexecstack
# libc alone (glibc 2.34 took libdl and libpthread in; --as-needed drops them
# where they are stubs): the library loads into every process that inherits
# LD_PRELOAD and must cost nothing there. libbpf is opened only for the probe.
LIB_LIBS := -Wl,--as-needed -ldl -lpthread

LIB_SOURCES := $(filter-out %.bpf.c,$(wildcard libnvtxshim/*.c)) $(wildcard libnvtxshim/hooks/*.c) \
               $(wildcard libnvtxshim/registry/*.c) $(wildcard libnvtxshim/devices/*.c) \
               $(wildcard libnvtxshim/recorder/*.c)
LIB_OBJECTS := $(patsubst libnvtxshim/%.c,$(BUILD)/obj/%.o,$(LIB_SOURCES))
FLAGS_CLASSES += lib lib-link cpp
FLAGS_lib = $(CC) $(LIB_CFLAGS)
FLAGS_lib-link = $(CC) $(LIB_LDFLAGS) $(LIB_LIBS)
FLAGS_cpp = $(CC) $(TABLE_FLAGS)
# The configuration parser (config.c, and registry/names.c for call:NAME) is compiled once,
# for the library; the command and the unit test link the same objects
# (position-independent code links into programs too).
CONFIG_OBJECTS := $(BUILD)/obj/config.o $(BUILD)/obj/registry/names.o

# The kernel probe (NVTXSHIM_KERNEL=on) needs libbpf, bpftool, clang and the
# kernel's BTF at build time; without them the library is built without it.
BPFTOOL ?= $(firstword $(shell command -v bpftool 2>/dev/null) $(wildcard /usr/sbin/bpftool /sbin/bpftool))
CLANG ?= $(shell command -v clang 2>/dev/null)
VMLINUX_BTF ?= /sys/kernel/btf/vmlinux
BPF_ARCH := $(patsubst x86_64,x86,$(patsubst aarch64,arm64,$(shell uname -m)))
# make KERNEL_PROBE=yes or KERNEL_PROBE=no decides instead of what is found.
ifeq ($(origin KERNEL_PROBE),undefined)
KERNEL_PROBE := $(if $(and $(BPFTOOL),$(CLANG),$(wildcard $(VMLINUX_BTF)),\
                  $(shell pkg-config --exists libbpf 2>/dev/null && echo yes)),yes)
endif
override KERNEL_PROBE := $(filter yes,$(KERNEL_PROBE))
# The two objects the probe changes: kernel.c (the probe or its stubs) and
# kernel_libbpf.c (libbpf's functions or nothing). Their class, kernel, holds
# the decision; the other objects of the library do not depend on it.
KERNEL_OBJECTS := $(BUILD)/obj/kernel.o $(BUILD)/obj/kernel_libbpf.o
$(KERNEL_OBJECTS): $(call flags,kernel)
ifeq ($(KERNEL_PROBE),yes)
PROBE_CFLAGS := -DNVS_KERNEL_PROBE -I$(BUILD)/kernel
# Generated: it must exist before kernel.c's first compile.
$(BUILD)/obj/kernel.o: $(BUILD)/kernel/kernel.skel.h
endif
FLAGS_CLASSES += kernel bpf
FLAGS_kernel = probe=$(if $(KERNEL_PROBE),yes,no) $(PROBE_CFLAGS)
# The source named relative to the tree in the object's debug information (the
# library embeds the object): a build does not depend on where the clone is.
BPF_CFLAGS = -g -O2 -target bpf -D__TARGET_ARCH_$(BPF_ARCH) -I$(BUILD)/kernel -Ilibnvtxshim \
             -ffile-prefix-map=$(CURDIR)=. -fdebug-compilation-dir=.
FLAGS_bpf = $(CLANG) $(BPF_CFLAGS) $(BPFTOOL) $(VMLINUX_BTF)

.PHONY: all deps test check demo install clean check-nvtx programs
NO_PROBE_LINE ?= libnvtxshim: built without the kernel probe (it needs libbpf, bpftool, clang and $(VMLINUX_BTF): make deps, then make)
all: check-nvtx $(BUILD)/libnvtxshim.so
	@$(if $(KERNEL_PROBE),,echo "$(NO_PROBE_LINE)")

# The probe: vmlinux.h from this kernel's BTF (CO-RE makes the object portable),
# the BPF object, and its skeleton, which embeds the object in the library.
$(BUILD)/kernel/vmlinux.h: $(call flags,bpf)
	$(call say,GEN)
	$(Q)$(BPFTOOL) btf dump file $(VMLINUX_BTF) format c > $@.tmp && mv $@.tmp $@

$(BUILD)/kernel/kernel.bpf.o: libnvtxshim/kernel.bpf.c $(BUILD)/kernel/vmlinux.h $(call flags,bpf) $(DEPFILE)
	$(call say,BPF)
	$(Q)$(CLANG) $(BPF_CFLAGS) $(DEPFLAGS) -c $< -o $@

$(BUILD)/kernel/kernel.skel.h: $(BUILD)/kernel/kernel.bpf.o $(call flags,bpf)
	$(call say,GEN)
	$(Q)$(BPFTOOL) gen skeleton $< name nvs_kernel > $@.tmp && mv $@.tmp $@

check-nvtx:
	@if [ -z "$(NVTX_INCLUDE)" ] || [ -z "$(CUDA_VERSION_NUMBER)" ]; then \
	  echo "nvtx3/nvToolsExt.h and cuda.h are needed from \$$CUDA_HOME/include, /usr/local/cuda/include or /usr/include: run 'make deps'" >&2; exit 1; fi

# The version script, from the registry's tables.
$(BUILD)/exports.map: libnvtxshim/registry/exports.map.in $(call flags,cpp) $(DEPFILE)
	$(call say,GEN)
	$(Q)$(CC) -E -P -x c $(TABLE_FLAGS) $(DEPFLAGS) $< -o $@

$(BUILD)/obj/%.o: libnvtxshim/%.c $(call flags,lib) $(DEPFILE)
	$(call say,CC)
	$(Q)$(CC) $(LIB_CFLAGS) $(if $(filter $@,$(KERNEL_OBJECTS)),$(PROBE_CFLAGS)) $(DEPFLAGS) -c $< -o $@

# Before the link, the check that the library's own calls never reach its
# exported wrappers (-Bsymbolic would bind them inside): log lines,
# the trace file and the clock go to the kernel (sys.h), lookups to glibc's
# dlsym, the program's descriptors to NVS_REAL.
$(BUILD)/libnvtxshim.so: $(LIB_OBJECTS) $(BUILD)/exports.map $(call flags,lib-link) scripts/own_calls.sh
	$(call say,LD)
	$(Q)scripts/own_calls.sh $(BUILD)/exports.map $(LIB_OBJECTS)
	$(Q)$(CC) $(LIB_LDFLAGS) $(LIB_OBJECTS) -o $@ $(LIB_LIBS)

PROGRAM_CFLAGS := $(CFLAGS) -std=gnu11 -pthread $(WARNINGS) $(LIBUSB_CFLAGS)
# The examples, the test programs and their test doubles, bench's programs: every
# flag their rules use, and the headers' directories.
FLAGS_CLASSES += program
FLAGS_program = $(CC) $(CFLAGS) $(PROGRAM_CFLAGS) $(BASE_WARNINGS) $(TABLE_FLAGS) \
                $(NVTX_INCLUDE) $(CUDA_INCLUDE)

# Targets beyond the library (the command, the test programs, bench, sanitizers,
# fuzz, soak) live in mk/*.mk; each may add to TEST_PROGRAMS, which make test
# builds, and to NESTED_BUILDS, build directories inside $(BUILD) made by a make
# of their own.
TEST_PROGRAMS :=
NESTED_BUILDS :=
-include $(sort $(wildcard mk/*.mk))

deps:
	$(Q)scripts/deps.sh

# Everything the pytest suite runs, without the installation (make BUILD=DIR
# programs, then NVS_TEST_BUILD=DIR pytest test/...: a second build beside the first).
programs: all $(or $(ARCH_PROGRAMS),$(TEST_PROGRAMS))

# deps first, then a fresh make: what deps installed (libbpf, nvcc, the NVTX
# headers) changes what this Makefile finds when it is read. deps calls apt only for
# what is missing (one line and no apt call where everything is there); make check is
# the same suite with no installation at all (a machine without root or a network).
.PHONY: check
test: deps deps-aarch64
	$(Q)$(MAKE) --no-print-directory check

# Its builds on every core (a fresh clone's took 113 s one at a time, 41 s on two), unless
# make was given -j, whose jobserver then shares them.
CHECK_JOBS = $(if $(filter -j%,$(MAKEFLAGS)),,-j$(shell nproc 2>/dev/null || echo 1))
check:
	$(Q)$(MAKE) --no-print-directory $(CHECK_JOBS) all $(TEST_PROGRAMS)
	$(Q)$(MAKE) --no-print-directory $(CHECK_JOBS) aarch64-programs
	$(Q)scripts/check.sh "$(MAKE)" $(PYTHON) -q -rs --durations=15 test/ -p no:cacheprovider

demo: deps
	$(Q)$(MAKE) --no-print-directory all $(BUILD)/harness_physical $(BUILD)/emucam \
	  $(BUILD)/test/stub/libcuda.so.1 $(BUILD)/test/libemuv4l2.so
	$(Q)scripts/demo.sh

# make tags: a ctags index (tags) that also finds every wrapper a macro writes, at the line
# that makes it (scripts/tags.py).
.PHONY: tags
tags:
	$(Q)scripts/tags.py

# pip install build/wheel/dist/nvtxshim-*.whl (scripts/wheel.sh; pyproject.toml, setup.py)
.PHONY: wheel
wheel:
	$(Q)scripts/wheel.sh

install: all
	install -d $(DESTDIR)$(PREFIX)/lib
	install -m 0755 $(BUILD)/libnvtxshim.so $(DESTDIR)$(PREFIX)/lib/libnvtxshim.so

clean:
	rm -rf $(BUILD)

# make -j clean all: the removal first, never beside the build.
ifneq ($(filter clean,$(MAKECMDGOALS)),)
.NOTPARALLEL:
endif

# The flags files: each rewritten (FORCE) when its text is not the one it holds.
# A static pattern rule, so that none is an intermediate file that make deletes.
same_text = $(and $(findstring $(1),$(2)),$(findstring $(2),$(1)))
flags_unchanged = $(call same_text,$(strip $(file <$(FLAGS_DIR)/$(1))),$(strip $(FLAGS_$(1))))
squote = '$(subst ','\'',$(1))'
$(addprefix $(FLAGS_DIR)/,$(FLAGS_CLASSES)): $(FLAGS_DIR)/%: $$(if $$(call flags_unchanged,$$*),,FORCE)
	$(call say,FLAGS)
	$(Q)printf '%s\n' $(call squote,$(strip $(FLAGS_$*))) > $@.tmp && mv $@.tmp $@

# The dependency files of this build (those of the nested builds are theirs).
-include $(shell find $(BUILD) $(foreach dir,$(NESTED_BUILDS),-path $(dir) -prune -o) \
           -type f -name '*.d' -print 2>/dev/null)
