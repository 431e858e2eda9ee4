"""Retrieval: candidates found, fused, screened and read into evidence; untrusted text kept out."""
