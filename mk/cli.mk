# The nvtxshim command (issue 9): run, profile, check (cli/run.c, cli/check.c),
# report and convert. The one part of the project that may link more than libc:
# libsqlite3, for reading nsys exports. It compiles the library's own
# configuration parser (config.c, and names.c for call:NAME), so that an option
# is checked exactly as the library checks the variable it sets.
CLI_SOURCES := $(sort $(wildcard cli/*.c)) libnvtxshim/config.c libnvtxshim/hooks/names.c

$(BUILD)/nvtxshim: $(CLI_SOURCES) $(wildcard cli/*.h) $(wildcard libnvtxshim/*.h) $(HOOK_TABLES)
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $@")
	$(Q)$(CC) $(PROGRAM_CFLAGS) $(TABLE_FLAGS) -Ilibnvtxshim $(CLI_SOURCES) -o $@ \
	  -lsqlite3 -lm -ldl

all: $(BUILD)/nvtxshim
TEST_PROGRAMS += $(BUILD)/nvtxshim

# make install: the command beside the library, PREFIX/bin/nvtxshim finding
# PREFIX/lib/libnvtxshim.so as ../lib from itself.
.PHONY: install-cli
install: install-cli
install-cli: all
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 $(BUILD)/nvtxshim $(DESTDIR)$(PREFIX)/bin/nvtxshim
