// The C ABI of the models module (libttap_models.so). The module links libtorch; nothing else in
// ttap does, so start-up stays light: server/models_loader.cpp dlopen()s the module on first use.
// Plain C types only, so the ABI does not depend on libtorch's or the standard library's.
#pragma once

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// 3: window features in ttap_window_batch; 4: score parts; 5: flag threshold
// (ttap_models_set_tuning).
#define TTAP_MODELS_API_VERSION 5

// Returns TTAP_MODELS_API_VERSION of the module.
int ttap_models_api_version(void);
// Writes a NUL-terminated description of the backend ("libtorch 1.13.1, CPU, 2 threads") into
// |buf|; returns the length it needed.
size_t ttap_models_describe(char* buf, size_t size);

// ---- The window scorer (models/window_model.cpp) ----
// One trace's windows as built by analysis/model/window_tensors.h (row-major, windows x events [x
// k]).
typedef struct ttap_window_batch {
  int windows, events, tokens;
  const int32_t* token_ids;      // windows x events x tokens, 0 = padding
  const int32_t* kinds;          // windows x events, 0 = padding
  const float* numeric;          // windows x events x 4
  const int32_t* lanes;          // windows x events
  const uint8_t* mask;           // windows x events, 1 = event
  int features;                  // per-window summary numbers (0 = none)
  const float* window_features;  // windows x features
} ttap_window_batch;

typedef struct ttap_train_example {
  ttap_window_batch batch;
  int trace_label;                 // 0 clean, 1 has anti-patterns, -1 unknown (windows only)
  const int32_t* window_category;  // per window: 0 none, k = k-th code, -1 unknown
} ttap_train_example;

typedef void (*ttap_progress_fn)(void* ctx, const char* line);

typedef struct ttap_train_options {
  int epochs;
  unsigned long long seed;
  int threads;             // intra-op threads (0 = libtorch's default)
  double max_seconds;      // stop after the epoch that crosses it (0 = no limit)
  const char* ablation;    // "", "no-names", "no-pos", "no-relation", "max-pool",
                           // "no-features", "no-augment"
  const char* codes;       // comma-separated category codes, index 1..n
  const char* trained_on;  // one line (JSON) recorded in the weights file
  const char* device;      // "auto", "cpu", "cuda"
  ttap_progress_fn progress;
  void* progress_ctx;
} ttap_train_options;

// Trains on |train| (validation on |val| picks the best epoch) and writes the weights file.
// Returns 0, or nonzero with a message in |err|.
int ttap_models_train(const ttap_train_example* train, int n_train, const ttap_train_example* val,
                      int n_val, const ttap_train_options* options, const char* out_path, char* err,
                      size_t err_size);
// Opens a weights file on |device| ("auto", "cpu", "cuda"); NULL with a message on failure.
void* ttap_models_open(const char* path, const char* device, int threads, char* err,
                       size_t err_size);
// The file's header: "key=value" lines (format, config, codes, threshold, score_parts,
// flag_threshold, trained_on, device).
size_t ttap_models_header(void* model, char* buf, size_t size);
// Scores every window: |scores| (0..1), |categories| (0 none, k = k-th code) and their
// probability |category_conf|, each |batch->windows| long; |parts| (may be NULL) gets the
// window's TTAP_SCORE_PARTS score parts, windows x 3: the MIL head, P(category != none) and the
// unusual-window term. |scores| combines the parts the file's `score_parts` header line names by
// noisy-OR. Returns 0 or nonzero with |err|.
#define TTAP_SCORE_PARTS 3
int ttap_models_score(void* model, const ttap_window_batch* batch, float* scores,
                      int32_t* categories, float* category_conf, float* parts, char* err,
                      size_t err_size);
// Writes the model to |out_path| with the window score made of |parts| ("mil", "cat", "unusual"
// joined by '+') and |flag_threshold| (0..1], the score at which `ttap scan` reports a window no
// rule explains (TTA900); the open model keeps scoring as before. Returns 0, or nonzero with
// |err|.
int ttap_models_set_tuning(void* model, const char* parts, double flag_threshold,
                           const char* out_path, char* err, size_t err_size);
void ttap_models_close(void* model);

#ifdef __cplusplus
}
#endif
