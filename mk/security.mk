# Security tests: a program that loads the library in secure execution.
TEST_PROGRAMS += $(BUILD)/test/secure_probe
