// The Highway target autograd's kernels run on (e.g. "AVX2"), for manifests, benchmarks and tests.
// A public header: code outside autograd may include it (the layering test's list of public
// kernels/ headers), unlike the kernel families' headers, which are autograd's own.
#pragma once

namespace normlab::autograd::kernels {

/// The name of the Highway target the dispatcher picks now (e.g. "AVX2"): the best target compiled
/// in that this CPU supports (or the one a test pinned with hwy::SetSupportedTargetsForTest).
const char* active_target();

}  // namespace normlab::autograd::kernels
