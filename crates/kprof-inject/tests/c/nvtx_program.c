/* A CUDA-free program that only emits NVTX v3 calls, compiled against the NVTX v3 headers of the
 * nvtx-sys crate in the cargo registry (not part of this repo). Run with NVTX_INJECTION64_PATH
 * pointing at libkprof_inject.so, it exercises the real injection handshake. */
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <string.h>

int main(void) {
    nvtxDomainHandle_t d = nvtxDomainCreateA("app");
    nvtxStringHandle_t s = nvtxDomainRegisterStringA(d, "registered");
    nvtxEventAttributes_t a;
    memset(&a, 0, sizeof a);
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    a.message.registered = s;
    for (int i = 0; i < 3; i++) {
        nvtxRangePushA("outer");
        nvtxDomainRangePushEx(d, &a);
        nvtxDomainRangePop(d);
        nvtxRangePop();
    }
    nvtxEventAttributes_t e;
    memset(&e, 0, sizeof e);
    e.version = NVTX_VERSION;
    e.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    e.messageType = NVTX_MESSAGE_TYPE_ASCII;
    e.message.ascii = "ascii_ex";
    nvtxRangePushEx(&e);
    nvtxRangePop();
    nvtxRangeId_t id = nvtxRangeStartA("process_range");
    nvtxRangeEnd(id);
    nvtxRangePushW(L"wide");
    nvtxRangePop();
    nvtxRangePushA("left_open");
    puts("program done");
    return 0;
}
