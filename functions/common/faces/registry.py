"""Every public face, in the order a path is matched against their prefixes (the search tool's
`/api/tools/search` before the agent face's `/api/tools/`)."""

from __future__ import annotations

from functions.common.faces import agent, kb, multisource, search_tool, trust
from functions.common.faces.face import Face

FACES: tuple[Face, ...] = (trust.FACE, multisource.FACE, search_tool.FACE, agent.FACE, kb.FACE)


def face_for(path: str) -> Face | None:
    return next((face for face in FACES if face.serves(path)), None)
