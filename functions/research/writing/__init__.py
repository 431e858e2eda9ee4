"""Writing: drafts whose every sentence cites evidence ids, phrased and attributed."""
