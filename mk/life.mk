# The process-life tests' program (test/programs/process_life.c). The pattern
# rule links it with libusb; process_life_dl reaches libusb only through dlopen
# and dlsym, so that dlclose really unloads it.
TEST_PROGRAMS += $(BUILD)/test/process_life $(BUILD)/test/process_life_dl

$(BUILD)/test/process_life_dl: test/programs/process_life.c
	@mkdir -p $(@D)
	@$(if $(Q),echo "  CC      $< (dlopen)")
	$(Q)$(CC) $(PROGRAM_CFLAGS) -Wno-unused-function -DLIFE_DLOPEN $< -o $@ -ldl -lpthread
