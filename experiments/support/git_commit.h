// The git commit the normlab binary was built from, for the manifests (defined in a file that
// cmake/GitCommit.cmake regenerates at build time whenever the commit or its dirty state changes).
#pragma once

namespace normlab::experiments {

// 12 hex digits of HEAD at build time, with "-dirty" if tracked files had uncommitted changes;
// "unknown" when git was missing or the sources were not a git checkout.
const char* git_commit();

}  // namespace normlab::experiments
