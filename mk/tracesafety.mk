# The trace writer's adversary (test/programs/trace_adversary.c, for
# test/test_trace_safety.py): NVTX from the installed headers, no libusb.
TEST_PROGRAMS += $(BUILD)/test/trace_adversary

$(BUILD)/test/trace_adversary: test/programs/trace_adversary.c
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $<")
	$(Q)$(CC) $(PROGRAM_CFLAGS) -isystem $(NVTX_INCLUDE) $< -o $@ -lpthread
