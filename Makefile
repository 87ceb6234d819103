# libnvtxshim — see README.md. `make V=1` shows the commands.
.DEFAULT_GOAL := all
SHELL := /bin/bash

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

WARNINGS := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes
CFLAGS ?= -O2 -g
TABLE_FLAGS := -DNVS_CUDA_VERSION=$(CUDA_VERSION_NUMBER)
# NVTX_NO_IMPL: NVTX's inline implementation (a table of 146 function pointers,
# relocated at load) goes into emit.c alone, the one file that makes NVTX calls;
# a copy in every file that includes the header cost 1,100 relocations at load.
LIB_CFLAGS := $(CFLAGS) -std=gnu11 -fPIC -fvisibility=hidden -pthread $(WARNINGS) -DNVTX_NO_IMPL \
              -Wno-missing-prototypes -isystem $(NVTX_INCLUDE) -isystem $(CUDA_INCLUDE) \
              $(LIBUSB_CFLAGS) $(TABLE_FLAGS)
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
HOOK_TABLES := $(wildcard libnvtxshim/hooks/*.def)

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
$(BUILD)/obj/kernel.o: $(BUILD)/kernel/kernel.skel.h
endif

.PHONY: all deps test demo install clean check-nvtx
all: check-nvtx $(BUILD)/libnvtxshim.so
	@$(if $(KERNEL_PROBE),,echo "libnvtxshim: built without the kernel probe (it needs libbpf, bpftool, clang and $(VMLINUX_BTF): make deps, then make clean all)")

# The probe: vmlinux.h from this kernel's BTF (CO-RE makes the object portable),
# the BPF object, and its skeleton, which embeds the object in the library.
$(BUILD)/kernel/vmlinux.h:
	@mkdir -p $(@D)
	$(Q)$(BPFTOOL) btf dump file $(VMLINUX_BTF) format c > $@.tmp && mv $@.tmp $@

$(BUILD)/kernel/kernel.bpf.o: libnvtxshim/kernel.bpf.c libnvtxshim/kernel.h $(BUILD)/kernel/vmlinux.h
	@$(if $(Q),echo "  BPF     $<")
	$(Q)$(CLANG) -g -O2 -target bpf -D__TARGET_ARCH_$(BPF_ARCH) -I$(BUILD)/kernel -Ilibnvtxshim \
	  -c $< -o $@

$(BUILD)/kernel/kernel.skel.h: $(BUILD)/kernel/kernel.bpf.o
	@$(if $(Q),echo "  GEN     $@")
	$(Q)$(BPFTOOL) gen skeleton $< name nvs_kernel > $@.tmp && mv $@.tmp $@

check-nvtx:
	@if [ -z "$(NVTX_INCLUDE)" ] || [ -z "$(CUDA_VERSION_NUMBER)" ]; then \
	  echo "nvtx3/nvToolsExt.h and cuda.h are needed from \$$CUDA_HOME/include, /usr/local/cuda/include or /usr/include: run 'make deps'" >&2; exit 1; fi

$(BUILD)/exports.map: libnvtxshim/exports.map.in $(HOOK_TABLES)
	@mkdir -p $(@D)
	$(Q)$(CC) -E -P -x c $(TABLE_FLAGS) -Ilibnvtxshim $< -o $@

$(BUILD)/obj/%.o: libnvtxshim/%.c $(wildcard libnvtxshim/*.h) $(HOOK_TABLES)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(LIB_CFLAGS) -c $< -o $@

$(BUILD)/libnvtxshim.so: $(LIB_OBJECTS) $(BUILD)/exports.map
	@$(if $(Q),echo "  LD      $@")
	$(Q)$(CC) $(LIB_LDFLAGS) $(LIB_OBJECTS) -o $@ $(LIB_LIBS)

# ---- examples and test programs -------------------------------------------
PROGRAM_CFLAGS := $(CFLAGS) -std=gnu11 -pthread $(WARNINGS) $(LIBUSB_CFLAGS)

# The harness's GPU kernels, when nvcc is here: a fat binary (SASS for Turing
# to Hopper, PTX for later GPUs) embedded in the program with .incbin.
NVCC ?= $(firstword $(wildcard $(if $(CUDA_HOME),$(CUDA_HOME)/bin/nvcc) /usr/local/cuda/bin/nvcc) \
          $(shell command -v nvcc 2>/dev/null))
NVCC_GENCODE ?= -gencode arch=compute_75,code=sm_75 -gencode arch=compute_80,code=sm_80 \
                -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90
ifneq ($(NVCC),)
HARNESS_IMAGE := $(BUILD)/obj/harness_image.o
HARNESS_FLAGS := -DHARNESS_HAVE_IMAGE
endif

$(BUILD)/harness_kernels.fatbin: examples/harness_kernels.cu
	@mkdir -p $(@D)
	@$(if $(Q),echo "  NVCC    $<")
	$(Q)$(NVCC) -fatbin $(NVCC_GENCODE) $< -o $@

$(BUILD)/obj/harness_image.o: $(BUILD)/harness_kernels.fatbin
	@mkdir -p $(@D)
	$(Q)printf '\t.section .rodata\n\t.globl harness_image\n\t.balign 16\nharness_image:\n\t.incbin "%s"\n\t.byte 0\n\t.section .note.GNU-stack,"",@progbits\n' \
	  $< | $(CC) -c -x assembler - -o $@

$(BUILD)/harness_physical: examples/harness_physical.c examples/harness_infer.h $(HARNESS_IMAGE)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(PROGRAM_CFLAGS) $(HARNESS_FLAGS) -isystem $(CUDA_INCLUDE) $< $(HARNESS_IMAGE) -o $@ \
	  -lusb-1.0 -lX11 -lXext -ldl -lpthread

$(BUILD)/usb_capture: examples/usb_capture.c
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(PROGRAM_CFLAGS) $< -o $@ -lusb-1.0 -lpthread

$(BUILD)/test/%: test/programs/%.c test/programs/emulated_device.h
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(PROGRAM_CFLAGS) -isystem $(NVTX_INCLUDE) $< -o $@ -lusb-1.0 -ldl -lpthread

$(BUILD)/test/test_config: test/unit/test_config.c libnvtxshim/config.c libnvtxshim/hooks/names.c $(HOOK_TABLES)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(PROGRAM_CFLAGS) $(TABLE_FLAGS) -Ilibnvtxshim test/unit/test_config.c libnvtxshim/config.c \
	  libnvtxshim/hooks/names.c -o $@

# Without libusb on its link line: it asks dlsym for names whose libraries are absent.
$(BUILD)/test/dlsym_truth: test/programs/dlsym_truth.c
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(PROGRAM_CFLAGS) $< -o $@ -ldl

$(BUILD)/test/test_trace_json: test/unit/test_trace_json.c libnvtxshim/trace_json.c libnvtxshim/trace.h
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(PROGRAM_CFLAGS) -Ilibnvtxshim test/unit/test_trace_json.c libnvtxshim/trace_json.c -o $@

$(BUILD)/test/libpreload_probe.so: test/programs/preload_probe.c
	@mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -shared -fPIC $(WARNINGS) $< -o $@ -ldl

$(BUILD)/test/x11_draw: test/programs/x11_draw.c
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(PROGRAM_CFLAGS) $< -o $@ -lX11 -lXext

$(BUILD)/test/xcb_draw: test/programs/xcb_draw.c
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(PROGRAM_CFLAGS) $< -o $@ -lxcb -lxcb-shm

$(BUILD)/test/close_after_frames: test/programs/close_after_frames.c
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(PROGRAM_CFLAGS) $< -o $@ -lX11 -lXdamage

# The emulated camera + actuator (test/usbdev/README.md): umockdev's library
# answers the device node's ioctls here, so any number of URBs can be in flight.
$(BUILD)/emucam: test/usbdev/emucam.c
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(PROGRAM_CFLAGS) $$(pkg-config --cflags umockdev-1.0) $< -o $@ $$(pkg-config --libs umockdev-1.0)

# The stand-in driver: a test double for machines without a GPU, never installed.
$(BUILD)/test/stub/libcuda.so.1: test/cuda/stub_libcuda.c examples/harness_infer.h
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(CFLAGS) -shared -fPIC -fvisibility=hidden -pthread $(WARNINGS) -Wno-missing-prototypes \
	  -isystem $(CUDA_INCLUDE) -Iexamples -Wl,-soname,libcuda.so.1 $< -o $@
	$(Q)ln -sf libcuda.so.1 $(@D)/libcuda.so

$(BUILD)/test/stub/libcudart.so.13: test/cuda/stub_libcudart.c
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(CFLAGS) -shared -fPIC -fvisibility=hidden -pthread $(WARNINGS) -Wno-missing-prototypes \
	  -isystem $(CUDA_INCLUDE) -Wl,-soname,libcudart.so.13 $< -o $@ -ldl
	$(Q)ln -sf libcudart.so.13 $(@D)/libcudart.so

$(BUILD)/test/runtime_copies: test/cuda/runtime_copies.c $(BUILD)/test/stub/libcudart.so.13
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(PROGRAM_CFLAGS) -isystem $(CUDA_INCLUDE) $< -o $@ -L$(BUILD)/test/stub -lcudart

$(BUILD)/test/cuda_copies: test/cuda/cuda_copies.c $(BUILD)/test/stub/libcuda.so.1
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(PROGRAM_CFLAGS) -isystem $(CUDA_INCLUDE) $< -o $@ -L$(BUILD)/test/stub -lcuda -ldl

TEST_PROGRAMS := $(BUILD)/emucam $(BUILD)/harness_physical $(BUILD)/test/stub/libcuda.so.1 $(BUILD)/test/cuda_copies $(BUILD)/test/runtime_copies $(BUILD)/usb_capture $(BUILD)/test/x11_draw $(BUILD)/test/xcb_draw \
                 $(BUILD)/test/close_after_frames \
                 $(BUILD)/test/test_config $(BUILD)/test/test_trace_json $(BUILD)/test/nvtx_user \
                 $(BUILD)/test/dlsym_next $(BUILD)/test/dlsym_truth $(BUILD)/test/signal_ignore \
                 $(BUILD)/test/chdir_record \
                 $(BUILD)/test/libpreload_probe.so \
                 $(BUILD)/test/libmalloc_count.so $(BUILD)/test/usb_async_edges $(BUILD)/test/frame_loop

# Targets beyond the library and its tests (bench, sanitizers, fuzz, soak)
# live in mk/*.mk; each may add to TEST_PROGRAMS.
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
	  $(BUILD)/test/stub/libcuda.so.1
	$(Q)scripts/demo.sh

install: all
	install -d $(DESTDIR)$(PREFIX)/lib
	install -m 0755 $(BUILD)/libnvtxshim.so $(DESTDIR)$(PREFIX)/lib/libnvtxshim.so

clean:
	rm -rf $(BUILD)

$(BUILD)/test/libmalloc_count.so: test/programs/malloc_count.c
	@mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS) -shared -fPIC $(WARNINGS) -Wno-missing-prototypes $< -o $@ -ldl
