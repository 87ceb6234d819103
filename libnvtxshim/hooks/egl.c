/* EGL (libEGL) in NVTX domain "x11": buffer swaps, and the lookup that hands
 * out the wrappers (gl.c's, for GL's names). */
#define _GNU_SOURCE
#include <EGL/egl.h>

#include "display.h"

X11_SPLIT(EGLBoolean, eglSwapBuffers, (EGLDisplay display, EGLSurface surface), (display, surface),
          nvs_resolve, 0, (void)0,
          nvs_x11_begin(NVS_HOOK_ID(eglSwapBuffers), NVS_X11_SWAP, NVS_FRAME_X11_SWAP))

NVS_EXPORT __eglMustCastToProperFunctionPointerType eglGetProcAddress(const char *name)
{
    __typeof__(&eglGetProcAddress) real = NVS_REAL(eglGetProcAddress);
    if (!real)
        return NULL;
    return (__eglMustCastToProperFunctionPointerType)nvs_gl_entry_point(name, (void *)real(name),
                                                                        "egl");
}
