// Which findings the user turned off: `# ttap: ignore` / `# ttap: ignore[TTA001, TTA005]`
// comments on a finding's lines, and the project's `select` / `ignore` code lists
// ([tool.ttap], as ruff's lint.select / lint.ignore). Also the edit behind the editor's
// "suppress on this line" code action. Used by `ttap scan` (server/scan.cpp) on the files as
// on disk and by the language server on the buffers as typed.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "mapping/python_source.h"
#include "mapping/source_ranges.h"

namespace ttap {

// True when |line| holds `# ttap: ignore` (every code) or `# ttap: ignore[...]` naming |code|.
bool SuppressedOnLine(std::string_view line, const std::string& code);

// A suppression comment on any line of the mapped range (at most 50 lines), or on the frame's
// own 1-based |frame_line| when the finding was not re-anchored.
bool SuppressedAt(const PythonSource& src, const MappedRange& m, int frame_line,
                  const std::string& code);

// Whether |code| is reported under the project's lists: an empty |select| selects every code;
// entries are codes or prefixes ("TTA00", "TTA9") or "ALL"; |ignore| wins over |select|.
bool CodeSelected(const std::string& code, const std::vector<std::string>& select,
                  const std::vector<std::string>& ignore);
// "" when every entry is "ALL" or a prefix of a TTA code; else what is wrong.
std::string CheckCodeList(const std::vector<std::string>& codes);

// The edit that suppresses |code| on 0-based |line0|: adds it to the line's `ttap: ignore[...]`
// list when there is one, else appends `  # ttap: ignore[CODE]` to the line.
TextEdit SuppressionEdit(const PythonSource& src, int line0, const std::string& code);

}  // namespace ttap
