# make soak (not part of make test): the example harness for SOAK_FRAMES frames (100,000) on
# the emulated camera with the trace recorder and frames counted; memory sampled from /proc at
# start and end (it must stay flat), the trace read back (Python's json, or scripts/pftrace.py for
# SOAK_TRACE=trace.pftrace) and every frame in it.
# Knobs: SOAK_FRAMES, SOAK_OPTIONS, SOAK_OUT, SOAK_TRACE, SOAK_SAMPLE_S, SOAK_SETTLED_PERCENT,
# SOAK_RSS_SLACK_KB, SOAK_SHIM
# (scripts/soak.sh).
.PHONY: soak
soak: deps
	$(Q)$(MAKE) --no-print-directory all $(BUILD)/harness_physical $(BUILD)/emucam \
	  $(BUILD)/test/stub/libcuda.so.1
	$(Q)BUILD=$(BUILD) PYTHON=$(PYTHON) scripts/soak.sh
