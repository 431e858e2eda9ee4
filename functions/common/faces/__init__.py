"""The public API faces (agent, multisource, trust, knowledge base, and the agent seed's search tool): each
face's error body and its one error -> HTTP table. Routers declare their face to `create_app`."""
