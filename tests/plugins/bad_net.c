/* Libraries that are not acceptable net plugins, one per BAD_* definition (CMakeLists.txt here),
 * for the loader's tests (tests/unit/net/net_plugin_test.cc): each must be refused with a sentence.
 *   BAD_NO_SYMBOL  exports nothing a plugin exports
 *   BAD_NCCL_V10   exports only a NCCL version collcomm does not load
 *   BAD_VERSION    exports ccNetPlugin_v1 with version 99
 *   BAD_INIT       a complete plugin whose init fails, with a reason through lastError
 */
#include <stdio.h>

#include "collcomm_net.h"

#define EXPORT __attribute__((visibility("default")))

#if defined(BAD_NO_SYMBOL)
EXPORT int notANetPlugin = 1;
#elif defined(BAD_NCCL_V10)
EXPORT const int ncclNetPlugin_v10 = 10;
#else
static ccResult_t fails(void) { return ccInternalError; }
static ccResult_t init(ccNetLogger_t logger) {
  logger(CC_NET_LOG_INFO, "bad-init test plugin: init called");
  return ccSystemError;
}
static void lastError(char* buf, size_t size) { snprintf(buf, size, "bad-init test plugin: no fabric here"); }
#define STUB(type) ((type)(void*)fails)
EXPORT const ccNet_v1_t ccNetPlugin_v1 = {
    .name = "bad",
#if defined(BAD_VERSION)
    .version = 99,
#else
    .version = CC_NET_PLUGIN_VERSION,
#endif
    .init = init,
    .devices = STUB(ccResult_t (*)(int*)),
    .getProperties = STUB(ccResult_t (*)(int, ccNetProperties_v1_t*)),
    .listen = STUB(ccResult_t (*)(int, const ccNetSecret_v1_t*, void*, void**)),
    .connect = STUB(ccResult_t (*)(int, const ccNetSecret_v1_t*, void*, void**)),
    .abandonConnect = STUB(void (*)(void*)),
    .accept = STUB(ccResult_t (*)(void*, void**)),
    .regMr = STUB(ccResult_t (*)(void*, void*, size_t, int, void**)),
    .deregMr = STUB(ccResult_t (*)(void*, void*)),
    .isend = STUB(ccResult_t (*)(void*, const void*, size_t, uint32_t, void*, void**)),
    .irecv = STUB(ccResult_t (*)(void*, int, void**, const size_t*, const uint32_t*, void**, void**)),
    .test = STUB(ccResult_t (*)(void*, int*, size_t*)),
    .closeSend = STUB(ccResult_t (*)(void*)),
    .closeRecv = STUB(ccResult_t (*)(void*)),
    .closeListen = STUB(ccResult_t (*)(void*)),
    .lastError = lastError,
};
#endif
