# The nvtxshim command: run, profile, check (cli/run.c, cli/profile.c, cli/check.c),
# report and convert. The one part of the project that may link more than libc:
# libsqlite3, for reading nsys exports. It compiles the library's own
# configuration parser (config.c, and names.c for call:NAME), so that an option
# is checked exactly as the library checks the variable it sets.
CLI_SOURCES := $(sort $(wildcard cli/*.c)) libnvtxshim/config.c libnvtxshim/hooks/names.c libnvtxshim/schema.c

$(BUILD)/nvtxshim: $(CLI_SOURCES) $(wildcard cli/*.h) $(wildcard libnvtxshim/*.h) $(HOOK_TABLES)
	$(call say,CC)
	$(Q)$(CC) $(PROGRAM_CFLAGS) $(TABLE_FLAGS) -Ilibnvtxshim $(CLI_SOURCES) -o $@ \
	  -lsqlite3 -lm -ldl

all: $(BUILD)/nvtxshim
TEST_PROGRAMS += $(BUILD)/nvtxshim

# The unit tests of the command's JSON reader for trace files (cli/trace_json.c),
# run by test/test_cli_trace_json.py.
$(BUILD)/test/test_cli_trace_json: test/unit/test_cli_trace_json.c cli/trace_json.c cli/trace_json.h
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(PROGRAM_CFLAGS) -Icli test/unit/test_cli_trace_json.c cli/trace_json.c -o $@ -lm

TEST_PROGRAMS += $(BUILD)/test/test_cli_trace_json

# make install: the command beside the library, PREFIX/bin/nvtxshim finding
# PREFIX/lib/libnvtxshim.so as ../lib from itself.
.PHONY: install-cli
install: install-cli
install-cli: all
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 $(BUILD)/nvtxshim $(DESTDIR)$(PREFIX)/bin/nvtxshim
