"""Teams and their bearer tokens: who a request belongs to (issue 11, first slice: identity only)."""
