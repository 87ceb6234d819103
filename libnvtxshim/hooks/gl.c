/* GL (libGL, libOpenGL) and GLX in NVTX domain "x11": buffer swaps, texture
 * uploads, and the GLX lookups that hand out the wrappers. Mesa is built on
 * Xlib and XCB: its calls into them run below depth 0 and pass straight
 * through. */
#define _GNU_SOURCE
#include <GL/glx.h>
#include <inttypes.h>
#include <string.h>

#include "display.h"

/* ---- GLX -------------------------------------------------------------------------- */

X11_SPLIT(void, glXSwapBuffers, (Display * display, GLXDrawable drawable), (display, drawable),
          nvs_resolve, , nvs_check_xlib(display),
          nvs_x11_begin(NVS_HOOK_ID(glXSwapBuffers), NVS_X11_SWAP, NVS_FRAME_X11_SWAP))

/* A core GL function's name (glTexImage2D): GLX and EGL both answer it with
 * an entry point of that function. */
static bool is_gl_name(const char *name)
{
    return name[0] == 'g' && name[1] == 'l' && name[2] >= 'A' && name[2] <= 'Z' && name[2] != 'X';
}

/* Loaders that ask GLX or EGL for an entry point get the wrapper for that
 * API's hooked names and the hooked GL names; GLX answers any name with a
 * dispatch stub, so an EGL name asked of GLX (or the reverse) is passed back
 * untouched. */
void *nvs_gl_entry_point(const char *name, void *found, const char *prefix)
{
    if (!name || (strncmp(name, prefix, strlen(prefix)) && !is_gl_name(name)))
        return found;
    return nvs_resolve_substitute(name, found, true);
}

NVS_EXPORT __GLXextFuncPtr glXGetProcAddressARB(const GLubyte *name)
{
    __typeof__(&glXGetProcAddressARB) real = NVS_REAL(glXGetProcAddressARB);
    if (!real)
        return NULL;
    return (__GLXextFuncPtr)nvs_gl_entry_point((const char *)name, (void *)real(name), "glX");
}

NVS_EXPORT __GLXextFuncPtr glXGetProcAddress(const GLubyte *name)
{
    __typeof__(&glXGetProcAddressARB) real = (__typeof__(&glXGetProcAddressARB))nvs_resolve(
        NVS_HOOK_ID(glXGetProcAddress));
    if (!real)
        return NULL;
    return (__GLXextFuncPtr)nvs_gl_entry_point((const char *)name, (void *)real(name), "glX");
}

/* ---- GL texture uploads ------------------------------------------------------------
 * The program's pixels copied into the GL driver (with Mesa's llvmpipe or a
 * discrete GPU alike, the call returns once it has read them). Programs reach
 * these by linking libGL.so.1 or libOpenGL.so.0 (GLVND: both dispatch to the
 * current context's driver), through dlsym, or through glXGetProcAddress and
 * eglGetProcAddress (nvs_gl_entry_point above). */

#ifndef GL_HALF_FLOAT_OES
#define GL_HALF_FLOAT_OES 0x8D61
#endif

/* The bytes one pixel of FORMAT and TYPE takes in the program's memory; 0 when
 * the pair is not one of these. */
static unsigned gl_pixel_bytes(GLenum format, GLenum type)
{
    unsigned components;
    switch (format) {
    case GL_RED:
    case GL_GREEN:
    case GL_BLUE:
    case GL_ALPHA:
    case GL_LUMINANCE:
    case GL_DEPTH_COMPONENT:
    case GL_STENCIL_INDEX:
    case GL_RED_INTEGER:
    case GL_GREEN_INTEGER:
    case GL_BLUE_INTEGER:
    case GL_ALPHA_INTEGER: components = 1; break;
    case GL_RG:
    case GL_RG_INTEGER:
    case GL_LUMINANCE_ALPHA:
    case GL_DEPTH_STENCIL: components = 2; break;
    case GL_RGB:
    case GL_BGR:
    case GL_RGB_INTEGER:
    case GL_BGR_INTEGER: components = 3; break;
    case GL_RGBA:
    case GL_BGRA:
    case GL_RGBA_INTEGER:
    case GL_BGRA_INTEGER: components = 4; break;
    default: return 0;
    }
    switch (type) {
    case GL_UNSIGNED_BYTE:
    case GL_BYTE: return components;
    case GL_UNSIGNED_SHORT:
    case GL_SHORT:
    case GL_HALF_FLOAT:
    case GL_HALF_FLOAT_OES: return components * 2;
    case GL_UNSIGNED_INT:
    case GL_INT:
    case GL_FLOAT: return components * 4;
    /* Packed: one value holds the whole pixel. */
    case GL_UNSIGNED_BYTE_3_3_2:
    case GL_UNSIGNED_BYTE_2_3_3_REV: return 1;
    case GL_UNSIGNED_SHORT_5_6_5:
    case GL_UNSIGNED_SHORT_5_6_5_REV:
    case GL_UNSIGNED_SHORT_4_4_4_4:
    case GL_UNSIGNED_SHORT_4_4_4_4_REV:
    case GL_UNSIGNED_SHORT_5_5_5_1:
    case GL_UNSIGNED_SHORT_1_5_5_5_REV: return 2;
    case GL_UNSIGNED_INT_8_8_8_8:
    case GL_UNSIGNED_INT_8_8_8_8_REV:
    case GL_UNSIGNED_INT_10_10_10_2:
    case GL_UNSIGNED_INT_2_10_10_10_REV:
    case GL_UNSIGNED_INT_24_8:
    case GL_UNSIGNED_INT_10F_11F_11F_REV:
    case GL_UNSIGNED_INT_5_9_9_9_REV: return 4;
    case GL_FLOAT_32_UNSIGNED_INT_24_8_REV: return 8;
    }
    return 0;
}

/* The range of an upload of WIDTH x HEIGHT (x DEPTH, for a 3D call) pixels of
 * FORMAT and TYPE from PIXELS: the size in the name; the payload the bytes the
 * driver reads from the program's memory. Rows are read WIDTH pixels each
 * wherever GL_UNPACK_ROW_LENGTH puts them, so the count does not depend on it
 * (no GL state is asked). No payload when nothing is read (PIXELS NULL: storage
 * allocated only) or the pair is not known. */
static __attribute__((noinline)) void begin_upload(enum nvs_hook_id id, GLsizei width,
                                                   GLsizei height, GLsizei depth, GLenum format,
                                                   GLenum type, const void *pixels)
{
    uint64_t w = width > 0 ? (uint64_t)width : 0, h = height > 0 ? (uint64_t)height : 0;
    uint64_t d = depth > 0 ? (uint64_t)depth : 0;
    unsigned pixel = pixels ? gl_pixel_bytes(format, type) : 0;
    struct nvs_attributes range = NVS_ATTRIBUTES(NVS_DOMAIN_X11, NVS_X11_UPLOAD,
                                                 NVS_COLOR_X11_UPLOAD);
    if (pixel != 0)
        nvs_attributes_payload(&range, w * h * (depth ? d : 1) * pixel);
    char text[NVS_CALL_TEXT_MAX];
    /* 17 bits each: GL's largest textures are 32768 wide */
    uint64_t key = nvs_call_name_key(id, (w & 0x1ffff) << 34 | (h & 0x1ffff) << 17 | (d & 0x1ffff));
    struct nvs_name name;
    if (depth)
        NVS_NAME(name, NVS_DOMAIN_X11, key, text, "%s %" PRIu64 "x%" PRIu64 "x%" PRIu64,
                 nvs_hook_name(id), w, h, d);
    else
        NVS_NAME(name, NVS_DOMAIN_X11, key, text, "%s %" PRIu64 "x%" PRIu64, nvs_hook_name(id), w,
                 h);
    nvs_attributes_name(&range, name);
    nvs_call_open(id, NVS_FRAME_OFF, -1, &range);
}

/* The real GL function: the one named in x11.def, else where that is not
 * reachable (a program that has only libOpenGL.so.0, loaded RTLD_LOCAL by a
 * plugin) libOpenGL's, kept once found. */
static void *gl_resolve(enum nvs_hook_id id)
{
    void *found = nvs_resolve(id);
    if (found)
        return found;
    found = nvs_find_function("libOpenGL.so.0", nvs_hook_name(id));
    return found ? nvs_resolve_publish(id, found) : NULL;
}

X11_SPLIT(void, glTexImage2D,
          (GLenum target, GLint level, GLint internal_format, GLsizei width, GLsizei height,
           GLint border, GLenum format, GLenum type, const void *pixels),
          (target, level, internal_format, width, height, border, format, type, pixels), gl_resolve,
          , (void)0,
          begin_upload(NVS_HOOK_ID(glTexImage2D), width, height, 0, format, type, pixels))

X11_SPLIT(void, glTexSubImage2D,
          (GLenum target, GLint level, GLint x, GLint y, GLsizei width, GLsizei height,
           GLenum format, GLenum type, const void *pixels),
          (target, level, x, y, width, height, format, type, pixels), gl_resolve, , (void)0,
          begin_upload(NVS_HOOK_ID(glTexSubImage2D), width, height, 0, format, type, pixels))

X11_SPLIT(void, glTexImage3D,
          (GLenum target, GLint level, GLint internal_format, GLsizei width, GLsizei height,
           GLsizei depth, GLint border, GLenum format, GLenum type, const void *pixels),
          (target, level, internal_format, width, height, depth, border, format, type, pixels),
          gl_resolve, , (void)0,
          begin_upload(NVS_HOOK_ID(glTexImage3D), width, height, depth, format, type, pixels))

X11_SPLIT(void, glTexSubImage3D,
          (GLenum target, GLint level, GLint x, GLint y, GLint z, GLsizei width, GLsizei height,
           GLsizei depth, GLenum format, GLenum type, const void *pixels),
          (target, level, x, y, z, width, height, depth, format, type, pixels), gl_resolve, ,
          (void)0,
          begin_upload(NVS_HOOK_ID(glTexSubImage3D), width, height, depth, format, type, pixels))
