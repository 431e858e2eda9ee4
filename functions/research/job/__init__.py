"""The research job's synthesis, its results and the artifacts rendered from them."""
