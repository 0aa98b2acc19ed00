// The C ABI of the models module (libttap_models.so). The module links libtorch; nothing else in
// ttap does, so start-up stays light: server/models_loader.cpp dlopen()s the module on first use.
// Plain C types only, so the ABI does not depend on libtorch's or the standard library's.
#pragma once

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TTAP_MODELS_API_VERSION 1

// Returns TTAP_MODELS_API_VERSION of the module.
int ttap_models_api_version(void);
// Writes a NUL-terminated description of the backend ("libtorch 1.13.1, CPU, 2 threads") into
// |buf|; returns the length it needed.
size_t ttap_models_describe(char* buf, size_t size);

#ifdef __cplusplus
}
#endif
