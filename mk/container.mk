# make test-container (not part of make test; .ci/run runs it after): docker/Dockerfile built
# for real on a Debian 12 base with the engine found (docker, else podman, installed when
# missing), and the image run through docker/run.sh as its users run it - make demo, nvtxshim
# check, the Python harness recorded with nvtxshim run, X11 forwarding, the emulated devices
# from outside, nsys inside - each compared with the same run outside, made with this build's
# command and programs (scripts/container.sh, test/container/container_checks.py).
# Knobs: NVS_CONTAINER_ENGINE, NVS_CONTAINER_BASE, NVS_CONTAINER_IMAGE, NVS_CONTAINER_DOCKERFILE.
.PHONY: test-container
test-container: deps
	$(Q)$(MAKE) --no-print-directory all $(BUILD)/nvtxshim $(BUILD)/emucam \
	  $(BUILD)/harness_physical $(BUILD)/test/stub/libcuda.so.1 $(BUILD)/test/libemuv4l2.so
	$(Q)BUILD=$(BUILD) PYTHON=$(PYTHON) scripts/container.sh test
