// A test-only hook that makes one rank of a multi-process run fail on purpose, so the tests can
// check that the others end with a clear error instead of hanging. Set in the environment:
//   GATTN_TEST_FAULT=RANK:STEP:KIND   KIND = exit (exit 3 with a message), kill (SIGKILL itself)
//                                     or hang (sleep forever, as a stalled rank would)
// applied when optimizer step STEP begins on rank RANK. Unset (always, outside tests): nothing.
#pragma once
#include <cstdint>

namespace gattn::recipes {

// Acts on GATTN_TEST_FAULT for `rank` at the start of step `done` (1-based, as logged). A malformed
// value is ignored with a warning: it only ever comes from the test scripts.
void maybe_inject_fault(int rank, std::int64_t done);

}  // namespace gattn::recipes
