/* NVS_HIDDEN marks every variable one file of the library defines and others
 * use. -fvisibility=hidden makes the definitions hidden, but a declaration
 * without the mark tells the compiler the variable may live in another
 * object: it reads the variable's address from the GOT first (a load the
 * linker turns into a lea: two instructions for every read). Marked, the
 * variable is read with one instruction, relative to the code. The hot path
 * reads a dozen of them at each call. */
#ifndef NVS_HIDDEN_H
#define NVS_HIDDEN_H

#define NVS_HIDDEN __attribute__((visibility("hidden")))

#endif
