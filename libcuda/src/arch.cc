// Filled in by the GPU compatibility issue.
