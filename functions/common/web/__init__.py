"""The web edge shared by every app: installing the faces, the OpenAPI document, the web adapter."""
