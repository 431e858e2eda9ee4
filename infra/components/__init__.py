"""One construct per area; `infra.stack.ResearchStack` composes them."""
