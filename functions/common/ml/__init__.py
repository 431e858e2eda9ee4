"""The sentence embedder: MiniLM read with numpy, and the process's embedding passes."""
