"""Reference checking (`POST /v1/references/check`): whether each cited work exists as cited.

One module per role: `parsing` reads the references (formatted strings, bare DOIs, BibTeX entries),
`uploads` reads them from a PDF's reference section or a `.bib` file, `lookup` asks the registries
(by DOI first, then a bibliographic search) through the search connectors, `matching` scores a
registry record against a reference, `judging` gives each its verdict, and `checker` runs them in
order. The deployed adapter of the lookup port is `registries`.
"""

MAX_REFERENCES = 200  # references one check takes
MAX_REFERENCE_CHARS = 8000  # characters of one reference (a BibTeX entry with its abstract fits)
