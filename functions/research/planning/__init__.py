"""Planning: what a goal or question asks, as facets, queries and the one research plan."""
