/* Vulkan (the loader, libvulkan) in NVTX domain "x11": presents, and the
 * loader's lookups, which hand out the wrapper. */
#define _GNU_SOURCE
#include <string.h>
#include <vulkan/vulkan.h>

#include "display.h"

/* ---- Vulkan ----------------------------------------------------------------------------
 * A present is a swap: a range in category swap, and a frame marker for
 * NVTXSHIM_FRAME=x11.swap. Programs take vkQueuePresentKHR from the loader's
 * vkGetDeviceProcAddr or vkGetInstanceProcAddr (which answer with the driver's
 * or a layer's function): the wrapper is handed out instead, and it calls the
 * loader's exported vkQueuePresentKHR, which dispatches by the queue. */

X11_SPLIT(VkResult, vkQueuePresentKHR, (VkQueue queue, const VkPresentInfoKHR *info), (queue, info),
          nvs_resolve, VK_ERROR_INITIALIZATION_FAILED, (void)0,
          nvs_x11_begin(NVS_HOOK_ID(vkQueuePresentKHR), NVS_X11_SWAP, NVS_FRAME_X11_SWAP))

/* The loader's answer FOUND for NAME, or the wrapper where NAME is hooked (the
 * present, and the two lookups themselves) and the loader has it. Other
 * names, the startup's hundreds, are passed back after two comparisons. */
static void *own_vulkan_entry_point(const char *name, void *found)
{
    if (!found || !name || strncmp(name, "vk", 2) ||
        (strcmp(name + 2, "QueuePresentKHR") && strcmp(name + 2, "GetDeviceProcAddr") &&
         strcmp(name + 2, "GetInstanceProcAddr")))
        return found;
    return nvs_resolve_substitute(name, found, true);
}

NVS_EXPORT PFN_vkVoidFunction vkGetInstanceProcAddr(VkInstance instance, const char *name)
{
    __typeof__(&vkGetInstanceProcAddr) real = NVS_REAL(vkGetInstanceProcAddr);
    if (!real)
        return NULL;
    return (PFN_vkVoidFunction)own_vulkan_entry_point(name, (void *)real(instance, name));
}

NVS_EXPORT PFN_vkVoidFunction vkGetDeviceProcAddr(VkDevice device, const char *name)
{
    __typeof__(&vkGetDeviceProcAddr) real = NVS_REAL(vkGetDeviceProcAddr);
    if (!real)
        return NULL;
    return (PFN_vkVoidFunction)own_vulkan_entry_point(name, (void *)real(device, name));
}
