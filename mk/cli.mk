# The nvtxshim command: run, profile, check, report, diff, top and convert, one file
# each in cli/commands/ (the readers, the model and the writers they share in
# cli/readers/, cli/model/, cli/writers/, cli/util/). The one part of the project
# that may link more than libc: libsqlite3, for reading nsys exports, and zlib, for gzipped traces (convert
# writes OUT.gz, report reads it). It links the library's own
# configuration parser (config.c, and names.c for call:NAME), so that an option
# is checked exactly as the library checks the variable it sets; and its trace
# schema (schema.c).
# The sources sit in rooms by role, one folder deep; they include each other by
# room ("model/events.h"), from -Icli.
CLI_OBJECTS := $(patsubst cli/%.c,$(BUILD)/cli/%.o,$(sort $(wildcard cli/*/*.c)))
# The version, from one place (VERSION; the wheel's too, pyproject.toml).
NVS_VERSION := $(shell cat VERSION)
VERSION_FLAGS := -DNVS_VERSION='"$(NVS_VERSION)"'
# What the command links beyond glibc. The wheel (scripts/wheel.sh) links the
# static archives instead, so that it needs nothing of the system it lands on.
CLI_LIBS ?= -lsqlite3 -lz
FLAGS_CLASSES += cli
FLAGS_cli = $(CC) $(PROGRAM_CFLAGS) $(TABLE_FLAGS) $(VERSION_FLAGS) $(CLI_LIBS)

$(BUILD)/cli/%.o: cli/%.c $(call flags,cli) $(DEPFILE)
	$(call say,CC)
	$(Q)$(CC) $(PROGRAM_CFLAGS) $(DEPFLAGS) $(TABLE_FLAGS) $(VERSION_FLAGS) -Icli -Ilibnvtxshim -c $< -o $@

$(BUILD)/nvtxshim: $(CLI_OBJECTS) $(CONFIG_OBJECTS) $(BUILD)/obj/schema.o $(call flags,cli)
	$(call say,LD)
	$(Q)$(CC) $(PROGRAM_CFLAGS) $(filter %.o,$^) -o $@ $(CLI_LIBS) -lm -ldl -lpthread

all: $(BUILD)/nvtxshim
TEST_PROGRAMS += $(BUILD)/nvtxshim

# The unit tests of the command's JSON reader for trace files (cli/readers/trace_json.c)
# and of its JSON writing (cli/util/json_text.c), run by test/test_cli_trace_json.py.
CLI_JSON_OBJECTS := $(BUILD)/cli/readers/trace_json.o $(BUILD)/cli/util/json_text.o
$(BUILD)/test/test_cli_trace_json: test/unit/test_cli_trace_json.c $(CLI_JSON_OBJECTS) \
                                    $(call flags,cli) $(DEPFILE)
	$(call say,CC)
	$(Q)$(CC) $(PROGRAM_CFLAGS) $(DEPFLAGS) -Icli $< $(CLI_JSON_OBJECTS) -o $@ -lm

TEST_PROGRAMS += $(BUILD)/test/test_cli_trace_json

# The events the loaders give for a file, one a line (test/unit/events_dump.c), which
# test/test_cli_pftrace.py compares between a .pftrace and its JSON form.
$(BUILD)/test/events_dump: test/unit/events_dump.c $(filter-out $(BUILD)/cli/commands/main.o,$(CLI_OBJECTS)) \
                           $(CONFIG_OBJECTS) $(BUILD)/obj/schema.o $(call flags,cli) $(DEPFILE)
	$(call say,CC)
	$(Q)$(CC) $(PROGRAM_CFLAGS) $(DEPFLAGS) -Icli -Ilibnvtxshim $< $(filter %.o,$^) -o $@ \
	  $(CLI_LIBS) -lm -ldl -lpthread

TEST_PROGRAMS += $(BUILD)/test/events_dump

# make install: the command beside the library, PREFIX/bin/nvtxshim finding
# PREFIX/lib/libnvtxshim.so as ../lib from itself.
.PHONY: install-cli
install: install-cli
install-cli: all
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 $(BUILD)/nvtxshim $(DESTDIR)$(PREFIX)/bin/nvtxshim

# The figures builder at small limits (test/unit/test_figures.c includes cli/model/figures_builder.c
# with its own), run by test/test_figures.py.
$(BUILD)/test/test_figures: test/unit/test_figures.c cli/model/figures_builder.c \
                            $(filter-out $(BUILD)/cli/commands/main.o $(BUILD)/cli/model/figures_builder.o,$(CLI_OBJECTS)) \
                            $(CONFIG_OBJECTS) $(BUILD)/obj/schema.o $(call flags,cli) $(DEPFILE)
	$(call say,CC)
	$(Q)$(CC) $(PROGRAM_CFLAGS) $(DEPFLAGS) -Icli -Ilibnvtxshim $< $(filter %.o,$^) -o $@ \
	  $(CLI_LIBS) -lm -ldl -lpthread

TEST_PROGRAMS += $(BUILD)/test/test_figures
