"""The research pipeline shared by the research job and the answer engine: planning, relevance, screening."""
