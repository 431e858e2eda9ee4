"""Human checkpoints: what a person sees at each phase (views), what they may change (edits) and how the
change becomes the state the job goes on with (review)."""
