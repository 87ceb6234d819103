# The configuration parser under libFuzzer, test/fuzz/README.md.
#
#   make fuzz               builds $(BUILD)/fuzz/config_fuzz (clang, libFuzzer, ASan+UBSan)
#                           and runs it for FUZZ_SECONDS over test/fuzz/corpus; new
#                           inputs go to $(BUILD)/fuzz/corpus, and those that add
#                           coverage are merged into test/fuzz/corpus at the end
#   $(BUILD)/test/fuzz_replay   the same target fed by a plain main (gcc, ASan+UBSan),
#                           run over test/fuzz/corpus by test/test_bad_input.py
#
# clang and its runtime libraries (libclang-rt-14-dev on Debian 12) are needed
# for make fuzz only.

FUZZ_SECONDS ?= 600
FUZZ_CLANG ?= $(if $(CLANG),$(CLANG),clang)
FUZZ_SOURCES := test/fuzz/config_fuzz.c libnvtxshim/config.c libnvtxshim/registry/names.c
FUZZ_FLAGS := -g -O1 -std=gnu11 $(WARNINGS) $(TABLE_FLAGS) -Ilibnvtxshim \
              -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
FLAGS_CLASSES += fuzz
FLAGS_fuzz = $(FUZZ_CLANG) $(CC) $(FUZZ_FLAGS)

# Each linked from objects of its own (instrumented differently from the library's).
$(BUILD)/fuzz/libfuzzer/%.o: %.c $(call flags,fuzz) $(DEPFILE)
	$(call say,CLANG)
	$(Q)$(FUZZ_CLANG) $(FUZZ_FLAGS) -fsanitize=fuzzer-no-link $(DEPFLAGS) -c $< -o $@

$(BUILD)/fuzz/replay/%.o: %.c $(call flags,fuzz) $(DEPFILE)
	$(call say,CC)
	$(Q)$(CC) $(FUZZ_FLAGS) $(DEPFLAGS) -c $< -o $@

.PHONY: fuzz
$(BUILD)/fuzz/config_fuzz: $(patsubst %.c,$(BUILD)/fuzz/libfuzzer/%.o,$(FUZZ_SOURCES)) $(call flags,fuzz)
	$(call say,LD)
	$(Q)$(FUZZ_CLANG) $(FUZZ_FLAGS) -fsanitize=fuzzer $(filter %.o,$^) -o $@

fuzz: $(BUILD)/fuzz/config_fuzz
	@mkdir -p $(BUILD)/fuzz/corpus
	$(Q)cd $(BUILD)/fuzz && ./config_fuzz -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
	  -timeout=10 corpus $(abspath test/fuzz/corpus) 2>&1 | tee fuzz.log | grep -v '^#' ; \
	  test "$${PIPESTATUS[0]}" = 0
	$(Q)$(BUILD)/fuzz/config_fuzz -merge=1 test/fuzz/corpus $(BUILD)/fuzz/corpus 2>&1 | tail -1
	@grep -E 'stat::number_of_executed_units|Done [0-9]+ runs' $(BUILD)/fuzz/fuzz.log

$(BUILD)/test/fuzz_replay: $(patsubst %.c,$(BUILD)/fuzz/replay/%.o,test/fuzz/replay.c $(FUZZ_SOURCES)) \
                          $(call flags,fuzz)
	$(call say,LD)
	$(Q)$(CC) $(FUZZ_FLAGS) $(filter %.o,$^) -o $@

TEST_PROGRAMS += $(BUILD)/test/fuzz_replay
