// Text helpers of the explanations (server/core/explain.h): the Markdown written as plain text for
// clients that prefer it (eglot without markdown-mode, `ttap scan` text), and the GPU-busy
// sparkline.
#pragma once

#include <string>
#include <vector>

namespace ttap {

// Emphasis and code marks dropped, links as "label: url", table rules removed, cells apart.
std::string MarkdownToPlainText(const std::string& md);
// One block character per value in [0, 1].
std::string Sparkline(const std::vector<double>& v);

}  // namespace ttap
