"""The admin function: team and token management (`/admin/*`)."""
